# stampede-pass.vcl: catalogue.vcl with request coalescing defeated for the stampede's
# object: every request for /stampede is passed to the origin (`return (pass)`), so a
# stampede of N is N origin fetches (`vload attack --stampede N`, docs/caching.md). Other
# objects are cached as in catalogue.vcl, with no grace. PURGE from loopback removes an object.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "8081";
}

acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(405, "PURGE only from loopback"));
        }
        return (purge);
    }
    if (req.url ~ "^/stampede") {
        return (pass);
    }
}

sub vcl_backend_response {
    set beresp.grace = 0s;
}

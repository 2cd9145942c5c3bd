# buffered.vcl: catalogue.vcl with streaming off. On a miss Varnish stores the whole body
# from the origin before it sends the first byte to the client (beresp.do_stream = false),
# where by default it streams the body on as it arrives: set it beside catalogue.vcl with
# a large object (vload attack --catalogue 1 --object-size 100M) and compare the misses'
# first byte (docs/caching.md, section 13).
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
}

sub vcl_backend_response {
    set beresp.grace = 0s;
    set beresp.do_stream = false;
}

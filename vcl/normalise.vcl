# normalise.vcl: catalogue.vcl that normalises variants away before the lookup (vload
# attack --variants). Tracking parameters (utm_*) are stripped from the URL, and
# Accept-Language is folded to one value, so that every variant of an object is one cache
# key: set it beside catalogue.vcl, which keys on each variant, to see what they cost.
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
    # ?utm_source=x&a=1 -> ?a=1; ?a=1&utm_source=x -> ?a=1; ?utm_source=x -> (none).
    set req.url = regsuball(req.url, "&utm_[a-z]+=[^&]*", "");
    set req.url = regsub(req.url, "\?utm_[a-z]+=[^&]*&?", "?");
    set req.url = regsub(req.url, "\?$", "");
    # One language for every client: a site that serves one, or maps many to a few.
    unset req.http.Accept-Language;
}

sub vcl_backend_response {
    set beresp.grace = 0s;
}

# catalogue.vcl: for `vload attack --catalogue` workloads. Each object's TTL is the
# origin's Cache-Control max-age (--ttl; Varnish's default_ttl, 120 s, without one), and no
# grace: an expired object is a miss, as vload's cache model counts it, not a stale hit
# refreshed in the background. PURGE requests from loopback remove an object
# (vload attack --purge-every); from anywhere else they are refused.
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
}

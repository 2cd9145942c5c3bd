# catalogue.vcl: for `vload attack --catalogue` workloads. Each object's TTL is the
# origin's Cache-Control max-age (--ttl; Varnish's default_ttl, 120 s, without one), and no
# grace: an expired object is a miss, as vload's cache model counts it, not a stale hit
# refreshed in the background.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_backend_response {
    set beresp.grace = 0s;
}

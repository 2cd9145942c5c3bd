# hitmiss.vcl: hello.vcl plus an explicit `X-Cache: HIT|MISS` header set in vcl_deliver,
# the way many production setups (and CDNs) report cache status. vload classifies by
# X-Varnish first; this file lets a test or a user check that X-Cache agrees.
# One backend (vload-origin on 127.0.0.1:8081) and a long TTL.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_backend_response {
    set beresp.ttl = 1h;
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
}

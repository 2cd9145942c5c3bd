# tier-edge.vcl: the edge of a two-tier cache (vcl/run-tiers.sh: edge varnishd -> shield
# varnishd -> vload origin). Like vcl/catalogue.vcl (the origin's max-age as the TTL, no grace,
# PURGE from loopback), and each answer appends this cache's member to RFC 9211's
# Cache-Status, which lists the caches on the path nearest the origin first: "shield; hit",
# "shield; fwd=miss, edge; fwd=miss", ... vload reads each layer from it (the report's
# "layers" rows, the run file's cache.layers): docs/caching.md section 10.
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

sub vcl_deliver {
    if (obj.hits > 0) {
        set req.http.X-Vload-Member = "edge; hit";
    } else {
        set req.http.X-Vload-Member = "edge; fwd=miss";
    }
    if (resp.http.Cache-Status) {
        set resp.http.Cache-Status = resp.http.Cache-Status + ", " + req.http.X-Vload-Member;
    } else {
        set resp.http.Cache-Status = req.http.X-Vload-Member;
    }
}

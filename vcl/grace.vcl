# grace.vcl: vcl/catalogue.vcl with grace. An object past its TTL is served stale for up to
# 60 s while one background fetch refreshes it; if the origin is down, the fetch fails and the
# stale copy keeps being served. Each stale answer says so in RFC 9211's Cache-Status, as a hit
# with a negative ttl (its remaining freshness, rounded down), which vload counts as stale: the
# staleness an outage run measures (`vload attack --outage`, docs/caching.md section 9).
# Set VARNISHD_ARGS='-p default_grace=...' to no effect: the grace here is the VCL's.
vcl 4.1;

import std;

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
    set beresp.grace = 60s;
}

sub vcl_deliver {
    if (obj.hits > 0 && obj.ttl < 0s) {
        set resp.http.Cache-Status = "varnish; hit; ttl=" + std.integer(duration=obj.ttl - 1s);
    }
}

# hello.vcl: the minimal setup of the classic x86_64-vs-aarch64 Varnish comparison.
# One backend (vload-origin's 11-byte Hello World on 127.0.0.1:8081) and a long TTL,
# so every request after the first is a cache hit.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_backend_response {
    set beresp.ttl = 1h;
}

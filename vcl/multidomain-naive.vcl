# multidomain-naive.vcl: 30 virtual hosts (site01.example .. site30.example) behind one
# Varnish, with the same URL cleanup and per-domain rules as multidomain-split.vcl, written
# the way such files grow: one long chain in vcl_recv where every rule tests the URL and
# then the Host with a regular expression, so every request walks all 150 tests.
# Compare it with multidomain-split.vcl on server CPU per request (vload --watch-pid).
# Generated: the same rules for every host; only the host names differ.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_recv {
    # Cleanup for every host.
    set req.url = regsub(req.url, "#.*$", "");
    unset req.http.X-Site;
    # site01.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site01\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site01\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site01\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site01\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site01\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site01";
    }
    # site02.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site02\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site02\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site02\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site02\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site02\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site02";
    }
    # site03.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site03\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site03\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site03\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site03\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site03\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site03";
    }
    # site04.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site04\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site04\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site04\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site04\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site04\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site04";
    }
    # site05.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site05\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site05\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site05\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site05\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site05\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site05";
    }
    # site06.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site06\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site06\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site06\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site06\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site06\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site06";
    }
    # site07.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site07\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site07\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site07\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site07\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site07\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site07";
    }
    # site08.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site08\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site08\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site08\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site08\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site08\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site08";
    }
    # site09.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site09\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site09\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site09\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site09\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site09\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site09";
    }
    # site10.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site10\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site10\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site10\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site10\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site10\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site10";
    }
    # site11.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site11\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site11\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site11\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site11\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site11\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site11";
    }
    # site12.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site12\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site12\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site12\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site12\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site12\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site12";
    }
    # site13.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site13\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site13\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site13\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site13\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site13\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site13";
    }
    # site14.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site14\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site14\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site14\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site14\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site14\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site14";
    }
    # site15.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site15\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site15\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site15\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site15\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site15\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site15";
    }
    # site16.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site16\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site16\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site16\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site16\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site16\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site16";
    }
    # site17.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site17\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site17\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site17\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site17\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site17\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site17";
    }
    # site18.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site18\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site18\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site18\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site18\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site18\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site18";
    }
    # site19.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site19\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site19\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site19\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site19\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site19\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site19";
    }
    # site20.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site20\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site20\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site20\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site20\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site20\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site20";
    }
    # site21.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site21\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site21\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site21\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site21\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site21\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site21";
    }
    # site22.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site22\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site22\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site22\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site22\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site22\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site22";
    }
    # site23.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site23\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site23\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site23\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site23\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site23\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site23";
    }
    # site24.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site24\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site24\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site24\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site24\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site24\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site24";
    }
    # site25.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site25\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site25\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site25\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site25\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site25\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site25";
    }
    # site26.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site26\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site26\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site26\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site26\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site26\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site26";
    }
    # site27.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site27\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site27\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site27\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site27\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site27\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site27";
    }
    # site28.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site28\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site28\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site28\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site28\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site28\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site28";
    }
    # site29.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site29\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site29\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site29\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site29\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site29\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site29";
    }
    # site30.example
    if (req.url ~ "^/admin(/|$)" && req.http.host ~ "^(www\.)?site30\.example(:[0-9]+)?$") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$" && req.http.host ~ "^(www\.)?site30\.example(:[0-9]+)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=" && req.http.host ~ "^(www\.)?site30\.example(:[0-9]+)?$") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/" && req.http.host ~ "^(www\.)?site30\.example(:[0-9]+)?$") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site30\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site30";
    }
}

sub vcl_backend_response {
    set beresp.ttl = 1h;
}

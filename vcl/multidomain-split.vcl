# multidomain-split.vcl: the same 30 virtual hosts and the same rules as
# multidomain-naive.vcl, split by Host first: the Host is normalised once, a chain of plain
# string comparisons picks the host's own subroutine, and only that host's rules run.
# This is the well-known tuning that halved Varnish's CPU per request; measure it with
# vload --watch-pid and vload compare.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_recv {
    # Cleanup for every host.
    set req.url = regsub(req.url, "#.*$", "");
    unset req.http.X-Site;
    set req.http.X-Host = regsub(req.http.host, "^(www\.)?([^:]+)(:[0-9]+)?$", "\2");
    if (req.http.X-Host == "site01.example") {
        call site01;
    } elsif (req.http.X-Host == "site02.example") {
        call site02;
    } elsif (req.http.X-Host == "site03.example") {
        call site03;
    } elsif (req.http.X-Host == "site04.example") {
        call site04;
    } elsif (req.http.X-Host == "site05.example") {
        call site05;
    } elsif (req.http.X-Host == "site06.example") {
        call site06;
    } elsif (req.http.X-Host == "site07.example") {
        call site07;
    } elsif (req.http.X-Host == "site08.example") {
        call site08;
    } elsif (req.http.X-Host == "site09.example") {
        call site09;
    } elsif (req.http.X-Host == "site10.example") {
        call site10;
    } elsif (req.http.X-Host == "site11.example") {
        call site11;
    } elsif (req.http.X-Host == "site12.example") {
        call site12;
    } elsif (req.http.X-Host == "site13.example") {
        call site13;
    } elsif (req.http.X-Host == "site14.example") {
        call site14;
    } elsif (req.http.X-Host == "site15.example") {
        call site15;
    } elsif (req.http.X-Host == "site16.example") {
        call site16;
    } elsif (req.http.X-Host == "site17.example") {
        call site17;
    } elsif (req.http.X-Host == "site18.example") {
        call site18;
    } elsif (req.http.X-Host == "site19.example") {
        call site19;
    } elsif (req.http.X-Host == "site20.example") {
        call site20;
    } elsif (req.http.X-Host == "site21.example") {
        call site21;
    } elsif (req.http.X-Host == "site22.example") {
        call site22;
    } elsif (req.http.X-Host == "site23.example") {
        call site23;
    } elsif (req.http.X-Host == "site24.example") {
        call site24;
    } elsif (req.http.X-Host == "site25.example") {
        call site25;
    } elsif (req.http.X-Host == "site26.example") {
        call site26;
    } elsif (req.http.X-Host == "site27.example") {
        call site27;
    } elsif (req.http.X-Host == "site28.example") {
        call site28;
    } elsif (req.http.X-Host == "site29.example") {
        call site29;
    } elsif (req.http.X-Host == "site30.example") {
        call site30;
    }
    unset req.http.X-Host;
}

sub site01 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site01\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site01";
    }
}

sub site02 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site02\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site02";
    }
}

sub site03 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site03\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site03";
    }
}

sub site04 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site04\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site04";
    }
}

sub site05 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site05\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site05";
    }
}

sub site06 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site06\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site06";
    }
}

sub site07 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site07\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site07";
    }
}

sub site08 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site08\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site08";
    }
}

sub site09 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site09\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site09";
    }
}

sub site10 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site10\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site10";
    }
}

sub site11 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site11\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site11";
    }
}

sub site12 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site12\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site12";
    }
}

sub site13 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site13\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site13";
    }
}

sub site14 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site14\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site14";
    }
}

sub site15 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site15\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site15";
    }
}

sub site16 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site16\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site16";
    }
}

sub site17 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site17\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site17";
    }
}

sub site18 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site18\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site18";
    }
}

sub site19 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site19\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site19";
    }
}

sub site20 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site20\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site20";
    }
}

sub site21 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site21\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site21";
    }
}

sub site22 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site22\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site22";
    }
}

sub site23 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site23\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site23";
    }
}

sub site24 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site24\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site24";
    }
}

sub site25 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site25\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site25";
    }
}

sub site26 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site26\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site26";
    }
}

sub site27 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site27\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site27";
    }
}

sub site28 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site28\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site28";
    }
}

sub site29 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site29\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site29";
    }
}

sub site30 {
    if (req.url ~ "^/admin(/|$)") {
        return (pass);
    }
    if (req.url ~ "\.(css|js|png|jpe?g|gif|svg|woff2?)(\?.*)?$") {
        unset req.http.Cookie;
    }
    if (req.url ~ "[?&](utm_[a-z]+|gclid|fbclid)=") {
        set req.url = regsuball(req.url, "([?&])(utm_[a-z]+|gclid|fbclid)=[^&]*&?", "\1");
        set req.url = regsub(req.url, "[?&]$", "");
    }
    if (req.url ~ "^/old/") {
        set req.url = regsub(req.url, "^/old/", "/new/");
    }
    if (req.http.host ~ "^(www\.)?site30\.example(:[0-9]+)?$") {
        set req.http.X-Site = "site30";
    }
}

sub vcl_backend_response {
    set beresp.ttl = 1h;
}

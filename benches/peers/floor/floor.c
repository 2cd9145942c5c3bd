// The floor of a closed-loop HTTP/1.1 client on this host: the least a client can spend a
// request when it does nothing but send a fixed request, find the end of each response and
// time it. Not a tool (no errors handled beyond stopping, no chunked bodies, no timeouts):
// a yardstick for benches/peers/floor.sh, to tell how much of a client's CPU a request is
// the kernel's, which no client can cut, and how much io_uring would take off it.
//
//   floor MODE PORT CONNECTIONS SECONDS
//   MODE: epoll   one thread, level-triggered epoll, read then write per ready socket
//         uring   one thread, io_uring: each request a send linked to a recv, one
//                 submission a request, completions reaped in batches by one
//                 io_uring_enter (SINGLE_ISSUER | DEFER_TASKRUN)
// Prints: requests, seconds, requests/s, latency p50 and p99 in µs, loop turns.
//
// FLOOR_LIKE=LETTERS (epoll only) adds what vload's epoll loop does and the floor does not,
// one letter each, to find which of them costs (#36): n non-blocking sockets, MSG_DONTWAIT
// and MSG_NOSIGNAL on every call; t a 1 ms timerfd in the epoll set, read and re-armed each
// time it fires (vload's stall probe), T the same every 4 ms (this kernel's tick at 250 Hz); w epoll_pwait2 with a 10 ms timeout instead of
// epoll_wait's 100 ms (vload's wait while its probe is armed), W the same with 1 ms (its wait
// without the probe); h a second thread, idle, so the process is multi-threaded.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    size_t have;
    uint64_t sent_ns;
    char buf[2048];
};

static char request[256];
static size_t request_len;
// Latency in µs, one bucket a µs up to 64 ms (the run's quantiles, not a histogram library).
enum { BUCKETS = 65536 };
static uint64_t buckets[BUCKETS];

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

// The length of the complete response at the start of the buffer, or 0.
static size_t complete(const struct conn *c) {
    const char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end + 4 - c->buf);
    const char *cl = memmem(c->buf, head, "Content-Length: ", 16);
    size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
    return c->have >= head + body ? head + body : 0;
}

// A read of n bytes arrived: true when it completed a response (timed, consumed).
static int received(struct conn *c, size_t n, uint64_t *done) {
    c->have += n;
    size_t len = complete(c);
    if (!len) {
        if (c->have == sizeof c->buf) {
            fprintf(stderr, "a response longer than %zu bytes\n", sizeof c->buf);
            exit(1);
        }
        return 0;
    }
    uint64_t us = (now_ns() - c->sent_ns) / 1000;
    buckets[us < BUCKETS ? us : BUCKETS - 1]++;
    memmove(c->buf, c->buf + len, c->have - len);
    c->have -= len;
    ++*done;
    return 1;
}

static double quantile(uint64_t total, double q) {
    uint64_t rank = (uint64_t)(q * (double)total), seen = 0;
    for (int i = 0; i < BUCKETS; i++)
        if ((seen += buckets[i]) > rank)
            return i;
    return BUCKETS;
}

static int like(char letter) {
    const char *v = getenv("FLOOR_LIKE");
    return v && strchr(v, letter);
}

static void *idle(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void arm(int tfd) {
    struct itimerspec in = {.it_value = {.tv_nsec = like('T') ? 4000000 : 1000000}};
    if (timerfd_settime(tfd, 0, &in, NULL))
        die("timerfd_settime");
}

static void run_epoll(struct conn *cs, int n, uint64_t end, uint64_t *done, uint64_t *turns) {
    int ep = epoll_create1(0);
    if (ep < 0)
        die("epoll_create1");
    int flags = like('n') ? MSG_DONTWAIT | MSG_NOSIGNAL : 0, tfd = -1;
    int pwait2 = like('w') || like('W');
    if (like('n'))
        for (int i = 0; i < n; i++)
            fcntl(cs[i].fd, F_SETFL, fcntl(cs[i].fd, F_GETFL) | O_NONBLOCK);
    if (like('t') || like('T')) {
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
        if (tfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev))
            die("timerfd");
        arm(tfd);
    }
    if (like('h')) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL))
            die("pthread_create");
    }
    const struct timespec ms = {.tv_nsec = like('W') ? 1000000 : 10000000};
    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev))
            die("epoll_ctl");
        cs[i].sent_ns = now_ns();
        if (send(cs[i].fd, request, request_len, flags) != (ssize_t)request_len)
            die("send");
    }
    struct epoll_event evs[1024];
    while (now_ns() < end) {
        int k = pwait2 ? epoll_pwait2(ep, evs, 1024, &ms, NULL) : epoll_wait(ep, evs, 1024, 100);
        ++*turns;
        for (int e = 0; e < k; e++) {
            if (evs[e].data.u32 == UINT32_MAX) {
                uint64_t fired;
                if (read(tfd, &fired, sizeof fired) == sizeof fired)
                    arm(tfd);
                continue;
            }
            struct conn *c = &cs[evs[e].data.u32];
            ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, flags);
            if (r < 0 && errno == EAGAIN)
                continue;
            if (r == 0) {
                fprintf(stderr, "recv: connection %u closed by the server\n", evs[e].data.u32);
                exit(1);
            }
            if (r < 0)
                die("recv");
            if (received(c, (size_t)r, done)) {
                c->sent_ns = now_ns();
                if (send(c->fd, request, request_len, flags) != (ssize_t)request_len)
                    die("send");
            }
        }
    }
}

static struct io_uring_sqe *sqe(struct io_uring *ring) {
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    if (!s) {
        io_uring_submit(ring);
        s = io_uring_get_sqe(ring);
    }
    return s;
}

// A send linked to the recv of its response (the send's completion skipped), or the recv
// alone when a response came in parts.
static void queue(struct io_uring *ring, struct conn *c, uint32_t i, int with_send) {
    struct io_uring_sqe *s;
    if (with_send) {
        c->sent_ns = now_ns();
        s = sqe(ring);
        io_uring_prep_send(s, c->fd, request, request_len, 0);
        s->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
        s->user_data = ((uint64_t)i << 1) | 1;
    }
    s = sqe(ring);
    io_uring_prep_recv(s, c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
    s->user_data = (uint64_t)i << 1;
}

static void run_uring(struct conn *cs, int n, uint64_t end, uint64_t *done, uint64_t *turns) {
    struct io_uring ring;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    int err = io_uring_queue_init_params(4096, &ring, &p);
    if (err < 0) {
        errno = -err;
        die("io_uring_queue_init_params");
    }
    for (int i = 0; i < n; i++)
        queue(&ring, &cs[i], (uint32_t)i, 1);
    while (now_ns() < end) {
        io_uring_submit_and_wait(&ring, 1);
        ++*turns;
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            uint32_t i = (uint32_t)(cqe->user_data >> 1);
            if (cqe->res <= 0) {
                fprintf(stderr, "%s failed on connection %u: %s\n",
                        (cqe->user_data & 1) ? "send" : "recv", i,
                        cqe->res ? strerror(-cqe->res) : "closed by the server");
                exit(1);
            }
            queue(&ring, &cs[i], i, received(&cs[i], (size_t)cqe->res, done));
        }
        io_uring_cq_advance(&ring, seen);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: floor epoll|uring PORT CONNECTIONS SECONDS\n");
        return 2;
    }
    int epoll = !strcmp(argv[1], "epoll");
    if (!epoll && strcmp(argv[1], "uring")) {
        fprintf(stderr, "floor: mode is epoll or uring, not %s\n", argv[1]);
        return 2;
    }
    int port = atoi(argv[2]), n = atoi(argv[3]);
    double secs = atof(argv[4]);
    if (port < 1 || port > 65535 || n < 1 || n > 2000 || secs <= 0) {
        fprintf(stderr, "floor: a port, 1..2000 connections, a positive number of seconds\n");
        return 2;
    }
    request_len = (size_t)snprintf(request, sizeof request,
                                   "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
    struct conn *cs = calloc((size_t)n, sizeof *cs);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n; i++) {
        int one = 1;
        cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(cs[i].fd, (struct sockaddr *)&addr, sizeof addr))
            die("connect");
    }
    uint64_t start = now_ns(), end = start + (uint64_t)(secs * 1e9), done = 0, turns = 0;
    if (epoll)
        run_epoll(cs, n, end, &done, &turns);
    else
        run_uring(cs, n, end, &done, &turns);
    double took = (double)(now_ns() - start) / 1e9;
    printf("%llu %.3f %.0f %.0f %.0f %llu\n", (unsigned long long)done, took, (double)done / took,
           quantile(done, 0.5), quantile(done, 0.99), (unsigned long long)turns);
    return 0;
}

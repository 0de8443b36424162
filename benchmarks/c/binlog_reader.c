/* A minimal COM_BINLOG_DUMP reader: the most a client can take from a server (benchmarks/dump_throughput.py).
 *
 * Connects as root with no password (mysql_native_password or an auth switch to it), asks for CRC32 events with
 * capability 4, dumps from FILE position 4 non-blocking (flags NON_BLOCK|SEND_ANNOTATE, server_id 0, what
 * mariadb-binlog --read-from-remote-server --to-last-log asks) and counts the packets without copying their bytes.
 * Prints "events=N bytes=B artificial=A" (events and bytes of the stored events; artificial: fake events) and exits
 * 0 on the EOF packet, 1 on an ERR packet or a broken connection.
 *
 * Usage: binlog_reader HOST PORT FILE
 *
 * Tail mode (benchmarks/relay_latency.py, a replica's IO thread at its lightest): binlog_reader HOST PORT FILE POS
 * SERVER_ID dumps blocking from FILE:POS as replica SERVER_ID (heartbeat every 5 s), prints "ready" at its first event,
 * notes the CLOCK_MONOTONIC time each XID event arrives under the seq_no of the GTID before it, and on SIGTERM
 * prints "SEQ SECONDS" per transaction and exits 0.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF (4 << 20)

static unsigned char *buf;
static size_t have, at; /* bytes in buf, parse position */
static int fd;
static volatile sig_atomic_t stop; /* tail mode: SIGTERM ends the dump (read() returns EINTR) */

static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

static int fill(size_t need) { /* make `need` bytes available at buf+at */
    if (have - at >= need) return 0;
    memmove(buf, buf + at, have - at);
    have -= at;
    at = 0;
    if (need > BUF) return -1;
    while (have < need) {
        ssize_t n = read(fd, buf + have, BUF - have);
        if (n <= 0) return -1;
        have += (size_t)n;
    }
    return 0;
}

/* one packet (not joined across 16 MiB frames: only the handshake uses this) */
static unsigned char *packet(size_t *len, unsigned char *seq) {
    if (fill(4)) return NULL;
    *len = buf[at] | buf[at + 1] << 8 | buf[at + 2] << 16;
    *seq = buf[at + 3];
    if (fill(4 + *len)) return NULL;
    unsigned char *p = buf + at + 4;
    at += 4 + *len;
    return p;
}

static int send_packet(unsigned char seq, const void *payload, size_t len) {
    unsigned char hdr[4] = {len & 0xff, len >> 8 & 0xff, len >> 16 & 0xff, seq};
    if (write(fd, hdr, 4) != 4 || write(fd, payload, len) != (ssize_t)len) return -1;
    return 0;
}

static int fail(const char *what, const unsigned char *p, size_t len) {
    if (p && len > 3 && p[0] == 0xff)
        fprintf(stderr, "%s: error %d: %.*s\n", what, p[1] | p[2] << 8, (int)(len > 9 ? len - 9 : 0), p + 9);
    else
        fprintf(stderr, "%s failed\n", what);
    return 1;
}

static int query(const char *sql) {
    unsigned char cmd[512];
    size_t n = strlen(sql), len;
    unsigned char seq;
    cmd[0] = 3; /* COM_QUERY */
    memcpy(cmd + 1, sql, n);
    if (send_packet(0, cmd, n + 1)) return fail(sql, NULL, 0);
    unsigned char *p = packet(&len, &seq);
    if (!p || p[0] != 0) return fail(sql, p, len);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: %s HOST PORT FILE [POS SERVER_ID]\n", argv[0]);
        return 2;
    }
    int tail = argc == 6;
    size_t noted = 0, cap = 1 << 20;
    unsigned long long *seqs = NULL, seq_no = 0;
    double *times = NULL;
    if (tail) {
        struct sigaction act = {.sa_handler = on_term}; /* no SA_RESTART: the blocked read() returns */
        sigaction(SIGTERM, &act, NULL);
        seqs = malloc(cap * sizeof *seqs);
        times = malloc(cap * sizeof *times);
        if (!seqs || !times) return 2;
    }
    buf = malloc(BUF);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (!buf || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) return 2;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) return fail("connect", NULL, 0);
    size_t len;
    unsigned char seq;
    unsigned char *p = packet(&len, &seq);
    if (!p || p[0] != 10) return fail("handshake", p, len);
    /* HandshakeResponse41: LONG_PASSWORD|LONG_FLAG|PROTOCOL_41|TRANSACTIONS|SECURE_CONNECTION|PLUGIN_AUTH */
    unsigned char resp[128] = {0};
    uint32_t caps = 0x1 | 0x4 | 0x200 | 0x2000 | 0x8000 | 0x80000;
    memcpy(resp, &caps, 4);
    uint32_t maxpkt = 1 << 24;
    memcpy(resp + 4, &maxpkt, 4);
    resp[8] = 33; /* utf8_general_ci */
    size_t n = 32;
    memcpy(resp + n, "root", 5);
    n += 5;
    resp[n++] = 0; /* empty auth response */
    memcpy(resp + n, "mysql_native_password", 22);
    n += 22;
    if (send_packet(seq + 1, resp, n)) return fail("auth", NULL, 0);
    p = packet(&len, &seq);
    if (p && p[0] == 0xfe) { /* auth switch: an empty password answers any plugin's scramble with nothing */
        if (send_packet(seq + 1, "", 0)) return fail("auth switch", NULL, 0);
        p = packet(&len, &seq);
    }
    if (!p || p[0] != 0) return fail("auth", p, len);
    if (query("SET @master_binlog_checksum='CRC32'") || query("SET @mariadb_slave_capability=4")) return 1;
    if (tail && query("SET @master_heartbeat_period=5000000000")) return 1;
    /* COM_BINLOG_DUMP: pos 4, flags NON_BLOCK|SEND_ANNOTATE, server_id 0, file (tail: POS, blocking, SERVER_ID) */
    unsigned char dump[300] = {0x12, 4, 0, 0, 0, 3, 0, 0, 0, 0, 0};
    if (tail) {
        uint32_t pos = (uint32_t)strtoul(argv[4], NULL, 10), sid = (uint32_t)strtoul(argv[5], NULL, 10);
        memcpy(dump + 1, &pos, 4);
        dump[5] = 2; /* SEND_ANNOTATE_ROWS_EVENT only */
        memcpy(dump + 7, &sid, 4);
    }
    size_t fl = strlen(argv[3]);
    if (fl > 255) return 2;
    memcpy(dump + 11, argv[3], fl);
    if (send_packet(0, dump, 11 + fl)) return fail("dump", NULL, 0);
    int ready = !tail;
    unsigned long long events = 0, bytes = 0, artificial = 0;
    int cont = 0; /* the packet before was 0xffffff bytes: this one continues its event */
    for (;;) {
        if (fill(4)) {
            if (stop) break;
            return fail("dump stream", NULL, 0);
        }
        len = buf[at] | buf[at + 1] << 8 | buf[at + 2] << 16;
        if (cont) { /* the rest of a > 16 MiB event: skip it without buffering */
            size_t skip = len;
            at += 4;
            while (skip) {
                if (fill(1)) return fail("dump stream", NULL, 0);
                size_t k = have - at < skip ? have - at : skip;
                at += k;
                skip -= k;
            }
            cont = len == 0xffffff;
            continue;
        }
        if (fill(4 + (len < 32 ? len : 32))) {
            if (stop) break;
            return fail("dump stream", NULL, 0);
        }
        p = buf + at + 4;
        if (p[0] == 0xfe && len < 9) break; /* EOF */
        if (p[0] != 0) {
            fill(4 + len);
            return fail("dump", buf + at + 4, len);
        }
        uint32_t evlen;
        memcpy(&evlen, p + 1 + 9, 4);
        uint16_t flags = p[1 + 17] | p[1 + 18] << 8;
        if (!ready) { /* the dump's first event (its fake ROTATE) arrived: the dump runs */
            printf("ready\n");
            fflush(stdout);
            ready = 1;
        }
        if (tail && len >= 1 + 19 + 8 && p[1 + 4] == 162) /* GTID: its seq_no */
            memcpy(&seq_no, p + 1 + 19, 8);
        else if (tail && p[1 + 4] == 16 && noted < cap) { /* XID: when it arrived */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            seqs[noted] = seq_no;
            times[noted++] = (double)ts.tv_sec + ts.tv_nsec / 1e9;
        }
        if (flags & 0x20) artificial++;
        else {
            events++;
            bytes += evlen;
        }
        at += 4;
        size_t skip = len;
        while (skip) { /* never copied: consumed where read() put it */
            if (have == at && fill(1)) {
                if (stop) break;
                return fail("dump stream", NULL, 0);
            }
            size_t k = have - at < skip ? have - at : skip;
            at += k;
            skip -= k;
        }
        cont = len == 0xffffff;
    }
    if (tail) {
        for (size_t i = 0; i < noted; i++) printf("%llu %.9f\n", seqs[i], times[i]);
        return 0;
    }
    printf("events=%llu bytes=%llu artificial=%llu\n", events, bytes, artificial);
    return 0;
}

// The device's floor for N durable committers: how many commits/s a group
// commit can reach on DISK_DIR, with no server in the way.
//
// Each of N threads loops: spin THINK µs (the statement, the round trip and
// the client's own time), append a REC-byte record to a shared log (pwrite of
// the 512-byte blocks it touches, under a write mutex, as the engine's redo
// writer does), then wait until the log is durable up to its record. A waiter
// leads an fdatasync of everything written so far when fewer than K are in
// flight, otherwise it sleeps until one ends. K = 1 is the engine's group
// commit (one flush at a time, each covering every record written before it);
// K > 1 lets flushes overlap, which the device may coalesce.
//
// Read a server's cell against the K = 1 row with the same N: a server that
// acknowledges durable commits cannot beat it by much on the same disk (the
// think time is the only thing a faster server shortens).
//
// Build and run (root not needed):
//   cc -O2 -pthread -o group_commit_floor engine/bench/group_commit_floor.c
//   DISK_DIR=/var/tmp ./group_commit_floor [SECONDS per run, default 2]
// Environment: THINK_US [20], REC [200], REPEATS [2] (runs interleaved).
// Prints one markdown table (median commits/s, fsyncs/s, commits per fsync).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (64L << 20)
#define BLOCK 512
#define MAX_THREADS 64

static int fd;
static int think_us, rec_bytes, max_inflight;
static volatile int stop;
static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cv = PTHREAD_COND_INITIALIZER;
static long written, flushed, fsyncs;
static int inflight;
static char blocks[8 * BLOCK];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "group_commit_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *committer(void *out) {
    long commits = 0;
    while (!stop) {
        double until = now() + think_us * 1e-6;
        while (now() < until) {
        }
        pthread_mutex_lock(&write_mu);
        long start = written, end = written + rec_bytes;
        written = end;
        long first = start / BLOCK * BLOCK, last = (end - 1) / BLOCK * BLOCK;
        if (pwrite(fd, blocks, last - first + BLOCK, first % FILE_SIZE) < 0)
            die("pwrite");
        pthread_mutex_unlock(&write_mu);

        pthread_mutex_lock(&flush_mu);
        while (flushed < end) {
            if (inflight >= max_inflight) {
                pthread_cond_wait(&flush_cv, &flush_mu);
                continue;
            }
            inflight++;
            pthread_mutex_lock(&write_mu);
            long upto = written;
            pthread_mutex_unlock(&write_mu);
            pthread_mutex_unlock(&flush_mu);
            if (fdatasync(fd) < 0)
                die("fdatasync");
            pthread_mutex_lock(&flush_mu);
            inflight--;
            fsyncs++;
            if (upto > flushed)
                flushed = upto;
            pthread_cond_broadcast(&flush_cv);
        }
        pthread_mutex_unlock(&flush_mu);
        commits++;
    }
    *(long *)out = commits;
    return NULL;
}

struct result {
    double commits, fsyncs;
};

static struct result run(int threads, int k, double secs) {
    pthread_t th[MAX_THREADS];
    long counts[MAX_THREADS];
    stop = 0;
    written = flushed = fsyncs = 0;
    inflight = 0;
    max_inflight = k;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, committer, &counts[i]) != 0)
            die("pthread_create");
    usleep((useconds_t)(secs * 1e6));
    stop = 1;
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += counts[i];
    }
    return (struct result){total / secs, fsyncs / secs};
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    think_us = env_int("THINK_US", 20);
    rec_bytes = env_int("REC", 200);
    int repeats = env_int("REPEATS", 2);
    const char *dir = getenv("DISK_DIR") ? getenv("DISK_DIR") : "/var/tmp";
    if (secs <= 0 || rec_bytes <= 0 || rec_bytes > 6 * BLOCK || repeats < 1 || repeats > 16) {
        fprintf(stderr, "usage: group_commit_floor [SECONDS > 0]; REC 1..3072, REPEATS 1..16\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/group_commit_floor.%d", dir, getpid());
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        die(path);
    // Preallocated and synced, so fdatasync never has to update metadata.
    static char zeros[1 << 20];
    for (long off = 0; off < FILE_SIZE; off += sizeof zeros)
        if (pwrite(fd, zeros, sizeof zeros, off) < 0)
            die("preallocate");
    if (fsync(fd) < 0)
        die("fsync");
    memset(blocks, 1, sizeof blocks);

    static const int ns[] = {1, 2, 4, 8, 16}, ks[] = {1, 2, 4};
    enum { NN = sizeof ns / sizeof *ns, NK = sizeof ks / sizeof *ks };
    static double c[NN][NK][16], f[NN][NK][16];
    for (int r = 0; r < repeats; r++)
        for (int i = 0; i < NN; i++)
            for (int j = 0; j < NK; j++) {
                struct result x = run(ns[i], ks[j], secs);
                c[i][j][r] = x.commits;
                f[i][j][r] = x.fsyncs;
            }
    unlink(path);

    printf("## Group commit on %s: %d µs think, %d-byte records, %.1f s runs, median of %d\n\n",
           dir, think_us, rec_bytes, secs, repeats);
    printf("| committers | flushes in flight | commits/s | fsyncs/s | commits per fsync |\n");
    printf("|---|---|---|---|---|\n");
    for (int i = 0; i < NN; i++)
        for (int j = 0; j < NK; j++) {
            double cm = median(c[i][j], repeats), fm = median(f[i][j], repeats);
            printf("| %d | %d | %.0f | %.0f | %.2f |\n", ns[i], ks[j], cm, fm, fm > 0 ? cm / fm : 0);
        }
    return 0;
}

/* A bare system-call loop doing what mdtest's phases do, as fast as a C
 * loop can: the baseline that bench/mdtest-vs-syscalls.sh compares iolab
 * mdtest with. Each thread works in its own directory at the depth and
 * with the names of mdtest -u (test-dir.0-0/mdtest_tree.<t>.0/file.mdtest.<t>.<i>).
 * By default every call names its item by its whole path, as mdtest
 * does, so the kernel walks the path each time; with "at" as a fourth
 * argument, by its name in the directory held open (openat, fstatat,
 * mkdirat, unlinkat), as iolab mdtest does: the kernel walks one name.
 * Usage: mdtest_baseline DIR ITEMS THREADS [at]
 * Prints one line per phase: "<phase> <ops> <seconds> <ops/s>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { DIR_CREATE, DIR_STAT, DIR_REMOVE, FILE_CREATE, FILE_STAT, FILE_READ, FILE_REMOVE, NPHASE };
static const char *names[NPHASE] = {"dir_create", "dir_stat", "dir_remove", "file_create",
                                    "file_stat", "file_read", "file_remove"};
static const char *root;
static long items;
static pthread_barrier_t bar;
static double t_start[NPHASE], t_end[NPHASE];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int by_name;
static __thread int dfd = AT_FDCWD;

static void one(int phase, const char *p) {
    struct stat st;
    int fd, rc = 0;
    const char *full = p;
    if (by_name) p = strrchr(p, '/') + 1;
    switch (phase) {
    case DIR_CREATE: rc = mkdirat(dfd, p, 0775); break;
    case DIR_STAT: case FILE_STAT: rc = fstatat(dfd, p, &st, 0); break;
    case DIR_REMOVE: rc = unlinkat(dfd, p, AT_REMOVEDIR); break;
    case FILE_CREATE: fd = openat(dfd, p, O_CREAT | O_EXCL | O_WRONLY, 0664); rc = fd < 0 ? -1 : close(fd); break;
    case FILE_READ: fd = openat(dfd, p, O_RDONLY); rc = fd < 0 ? -1 : close(fd); break;
    case FILE_REMOVE: rc = unlinkat(dfd, p, 0); break;
    }
    if (rc != 0) { perror(full); exit(1); }
}

static void *worker(void *arg) {
    long t = (long)arg;
    char path[4096];
    int top = snprintf(path, sizeof path, "%s/test-dir.0-0", root);
    mkdir(path, 0775);
    int base = top + snprintf(path + top, sizeof path - top, "/mdtest_tree.%ld.0", t);
    mkdir(path, 0775);
    if (by_name && (dfd = open(path, O_DIRECTORY | O_RDONLY)) < 0) { perror(path); exit(1); }
    for (int ph = 0; ph < NPHASE; ph++) {
        pthread_barrier_wait(&bar);
        if (t == 0) t_start[ph] = now();
        const char *kind = ph < FILE_CREATE ? "dir" : "file";
        for (long i = 0; i < items; i++) {
            snprintf(path + base, sizeof path - base, "/%s.mdtest.%ld.%ld", kind, t, i);
            one(ph, path);
        }
        pthread_barrier_wait(&bar);
        if (t == 0) t_end[ph] = now();
    }
    if (by_name) close(dfd);
    path[base] = 0;
    rmdir(path);
    pthread_barrier_wait(&bar);
    path[top] = 0;
    if (t == 0) rmdir(path);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "at") != 0)) {
        fprintf(stderr, "usage: %s DIR ITEMS THREADS [at]\n", argv[0]);
        return 2;
    }
    by_name = argc == 5;
    root = argv[1];
    items = atol(argv[2]);
    long n = atol(argv[3]);
    pthread_t th[256];
    pthread_barrier_init(&bar, NULL, n);
    for (long t = 0; t < n; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (long t = 0; t < n; t++) pthread_join(th[t], NULL);
    for (int ph = 0; ph < NPHASE; ph++) {
        double s = t_end[ph] - t_start[ph];
        printf("%s %ld %.6f %.1f\n", names[ph], items * n, s, items * n / s);
    }
    return 0;
}

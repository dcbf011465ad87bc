/* One of two reference loads for host_jitter.py, on every CPU it may use:
 *   alu: a multiply-add chain in registers (no memory traffic);
 *   mem: random reads and writes over 64 MiB per thread (cache and memory).
 * Prints the loops finished in each second, for SECS seconds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORDS (16u * 1024u * 1024u)
#define MAX_THREADS 64

static atomic_long done[MAX_THREADS];
static int mem_mode;

static void *load(void *arg)
{
	long id = (long)arg;
	unsigned long x = (unsigned long)id + 1, sum = 0;
	unsigned *words = NULL;
	if (mem_mode) {
		words = malloc(WORDS * sizeof *words);
		if (!words) {
			perror("malloc");
			exit(1);
		}
		for (unsigned i = 0; i < WORDS; i++)
			words[i] = i;
	}
	for (;;) {
		for (int k = 0; k < 1000; k++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			if (mem_mode) {
				sum += words[(x >> 20) % WORDS];
				words[(x >> 33) % WORDS]++;
			}
		}
		atomic_fetch_add_explicit(&done[id], 1, memory_order_relaxed);
		if (sum == 42 && x == 42)
			puts("");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "alu") && strcmp(argv[1], "mem"))) {
		fprintf(stderr, "usage: host_jitter alu|mem THREADS SECS\n");
		return 2;
	}
	mem_mode = !strcmp(argv[1], "mem");
	int threads = atoi(argv[2]), secs = atoi(argv[3]);
	if (threads < 1 || threads > MAX_THREADS || secs < 1) {
		fprintf(stderr, "host_jitter: THREADS must be 1..%d and SECS >= 1\n", MAX_THREADS);
		return 2;
	}
	pthread_t t;
	for (long i = 0; i < threads; i++)
		pthread_create(&t, NULL, load, (void *)i);
	/* one second to fault the arrays in, then measure */
	struct timespec one = {1, 0};
	nanosleep(&one, NULL);
	long last = 0;
	for (int i = 0; i < threads; i++)
		last += atomic_load_explicit(&done[i], memory_order_relaxed);
	for (int s = 0; s < secs; s++) {
		nanosleep(&one, NULL);
		long now = 0;
		for (int i = 0; i < threads; i++)
			now += atomic_load_explicit(&done[i], memory_order_relaxed);
		printf("%ld\n", now - last);
		fflush(stdout);
		last = now;
	}
	return 0;
}

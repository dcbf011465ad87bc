// Bench control loader: loads OBJ, attaches every program in it, prints a
// JSON line each second until SIGTERM or SIGINT, then detaches. The links
// are not pinned: nothing outlives the process, however it ends.
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *links[8];
	int attached = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJ.bpf.o\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "dispatch-agent: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "dispatch-agent: cannot load %s: %s (run as root)\n", argv[1],
			strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (attached == 8) {
			fprintf(stderr, "dispatch-agent: more than 8 programs in %s\n", argv[1]);
			return 1;
		}
		links[attached] = bpf_program__attach(prog);
		if (!links[attached]) {
			fprintf(stderr, "dispatch-agent: cannot attach %s: %s\n",
				bpf_program__name(prog), strerror(errno));
			return 1;
		}
		attached++;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!stop) {
		printf("{\"dispatch_agent\": true, \"programs\": %d}\n", attached);
		fflush(stdout);
		sleep(1);
	}
	while (attached > 0)
		bpf_link__destroy(links[--attached]);
	bpf_object__close(obj);
	return 0;
}

// libbpf's own reading of USDT arguments, for comparison: loads OBJ (built
// from byo.bpf.c with the installed <bpf/usdt.bpf.h>), attaches its program
// "handle" with bpf_program__attach_usdt to PATH's PROVIDER:NAME (in process
// PID, or every process for -1) with usdt_cookie COOKIE, prints "ready" and
// then one line per event, in the format of usdtlink's tests, until stdin
// reaches its end. An attach that libbpf refuses prints "refused ERRNO" and
// exits 2.
//
//	gcc -O2 -o libbpf_loader libbpf_loader.c -lbpf
//	libbpf_loader OBJ PATH PROVIDER NAME PID COOKIE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

#define NARGS 12

struct event {
	__u64 cookie;
	__s64 cnt;
	__s64 args[NARGS];
	__s32 rc[NARGS];
	char str[32];
};

static int print_event(void *ctx, void *data, size_t size)
{
	const struct event *e = data;

	if (size < sizeof(*e))
		return 0;
	printf("%llu %lld", (unsigned long long)e->cookie, (long long)e->cnt);
	for (int i = 0; i < NARGS; i++)
		printf(" %lld", (long long)e->args[i]);
	for (int i = 0; i < NARGS; i++)
		printf(" %d", e->rc[i]);
	printf(" %.*s\n", (int)strnlen(e->str, sizeof(e->str)), e->str);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: %s OBJ PATH PROVIDER NAME PID COOKIE\n", argv[0]);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "open %s: %d\n", argv[1], errno);
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "load %s: %d\n", argv[1], errno);
		return 1;
	}
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "handle");
	LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = strtoull(argv[6], NULL, 0));
	struct bpf_link *link = bpf_program__attach_usdt(prog, atoi(argv[5]), argv[2], argv[3], argv[4], &opts);
	if (!link) {
		printf("refused %d\n", errno);
		return 2;
	}
	struct bpf_map *events = bpf_object__find_map_by_name(obj, "events");
	struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(events), print_event, NULL, NULL);
	if (!rb) {
		fprintf(stderr, "ring buffer: %d\n", errno);
		return 1;
	}
	printf("ready\n");
	struct pollfd fds[2] = {
		{.fd = 0, .events = POLLIN},
		{.fd = ring_buffer__epoll_fd(rb), .events = POLLIN},
	};
	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			return 1;
		ring_buffer__consume(rb);
		if (fds[0].revents) {
			char buf[64];
			if (read(0, buf, sizeof buf) <= 0)
				break;
		}
	}
	ring_buffer__consume(rb);
	bpf_link__destroy(link);
	ring_buffer__free(rb);
	bpf_object__close(obj);
	return 0;
}

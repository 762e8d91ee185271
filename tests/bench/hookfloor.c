// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hookfloor MODE -- CMD...: run CMD (as nobody) with tests/bench/
 * hookfloor.bpf.c's programs attached in MODE (empty, clock, ring, batch,
 * lookup at the syscall tracepoints; fexit-empty, fexit-ring on the
 * kernel functions; lock-empty, lock-ring, lock-lane at mmap_lock_released),
 * and read their ring as a recorder would, so that the bench can say what the
 * hooks alone cost on the mmap loop, beside jittrace and perf.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "hookfloor.skel.h"

/* The programs' families: a run attaches one. */
enum family { FAM_TP, FAM_FEXIT, FAM_LOCK };

/* A program's family, by its name in hookfloor.bpf.c. */
static enum family family_of(const char *name)
{
	if (strstr(name, "_fx_"))
		return FAM_FEXIT;
	if (strstr(name, "_lk_"))
		return FAM_LOCK;
	return FAM_TP;
}

/* Each mode's name, its programs' family, and its rodata mode. */
static const struct {
	const char *name;
	enum family family;
	__u32 mode; /* hookfloor.bpf.c's enum floor_mode */
} modes[] = {
	{ "empty", FAM_TP, 0 },		{ "ring", FAM_TP, 1 },
	{ "lookup", FAM_TP, 2 },	{ "clock", FAM_TP, 3 },
	{ "batch", FAM_TP, 4 },		{ "fexit-empty", FAM_FEXIT, 0 },
	{ "fexit-ring", FAM_FEXIT, 1 }, { "lane", FAM_TP, 5 },
	{ "lock-empty", FAM_LOCK, 0 },	{ "lock-ring", FAM_LOCK, 1 },
	{ "lock-lane", FAM_LOCK, 5 },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* One family of programs per run: the tracepoints, the fexits or the lock's. */
static void pick_family(struct hookfloor_bpf *skel, enum family f)
{
	struct bpf_program *p;

	bpf_object__for_each_program (p, skel->obj)
		bpf_program__set_autoload(p,
					  family_of(bpf_program__name(p)) == f);
}

static int drop(void *ctx, void *data, size_t size)
{
	(*(unsigned long *)ctx)++;
	return 0;
}

/* The child waits on the pipe until the programs know its pid. */
static pid_t spawn(char **argv, int *go)
{
	struct passwd *pw = getpwnam("nobody");
	int p[2];
	pid_t pid;
	char c;

	if (!pw || pipe(p))
		return -1;
	pid = fork();
	if (pid)
		goto parent;
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || setgroups(0, NULL) ||
	    setgid(pw->pw_gid) || setuid(pw->pw_uid))
		_exit(126);
	execvp(argv[0], argv);
	_exit(127);
parent:
	close(p[0]);
	*go = p[1];
	return pid;
}

int main(int argc, char **argv)
{
	struct hookfloor_bpf *skel;
	struct ring_buffer *rb;
	unsigned long n = 0;
	size_t mode;
	int go = -1, status;
	pid_t pid;

	for (mode = 0; argc > 3 && mode < NMODES; mode++)
		if (!strcmp(argv[1], modes[mode].name))
			break;
	if (argc < 4 || mode == NMODES || strcmp(argv[2], "--")) {
		fprintf(stderr,
			"usage: hookfloor MODE -- CMD...\n"
			"MODE: empty, clock, ring, batch, lane, lookup, "
			"fexit-empty, fexit-ring,\n"
			"      lock-empty, lock-ring, lock-lane\n");
		return 2;
	}
	pid = spawn(argv + 3, &go);
	skel = hookfloor_bpf__open();
	if (pid < 0 || !skel)
		return 1;
	pick_family(skel, modes[mode].family);
	skel->rodata->mode = modes[mode].mode;
	skel->rodata->pid = pid;
	if (hookfloor_bpf__load(skel) || hookfloor_bpf__attach(skel)) {
		fprintf(stderr, "hookfloor: cannot load: %s\n",
			strerror(errno));
		return 1;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.floor_ring), drop, &n,
			      NULL);
	if (!rb || write(go, "g", 1) != 1)
		return 1;
	/* Records come without wake-ups, as jittrace's do: read on a timer. */
	while (waitpid(pid, &status, WNOHANG) == 0) {
		usleep(10000);
		ring_buffer__consume(rb);
	}
	ring_buffer__consume(rb);
	fprintf(stderr, "hookfloor: %lu records\n", n);
	ring_buffer__free(rb);
	hookfloor_bpf__destroy(skel);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

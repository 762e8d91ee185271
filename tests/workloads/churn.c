// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Process churn as a fleet sees it: RATE short-lived processes a second,
 * each execs, writes a LINES-line perf-map, runs a millisecond and exits;
 * the parent removes the map once it reaped the child, unless told to
 * keep it (a test that needs every map there when the tracer reads it).
 * usage: churn RATE SECONDS LINES [keep] | churn child LINES
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int child(int lines)
{
	char path[64];
	double end;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	for (i = 0; i < lines; i++)
		fprintf(f, "%llx 40 churn_fn_%d\n",
			0x7f0000000000ULL + 64ULL * i, i);
	fclose(f);
	end = now() + 0.001;
	while (now() < end)
		;
	return 0;
}

static int keep;

static void reap(int flags)
{
	char path[64];
	pid_t pid;

	while ((pid = waitpid(-1, NULL, flags)) > 0) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
		if (!keep)
			unlink(path);
	}
}

int main(int argc, char **argv)
{
	double start, end, next;
	char lines[16];
	long n = 0;

	if (argc == 3 && !strcmp(argv[1], "child"))
		return child(atoi(argv[2]));
	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "keep")))
		return 2;
	keep = argc == 5;
	snprintf(lines, sizeof(lines), "%d", atoi(argv[3]));
	start = now();
	end = start + atof(argv[2]);
	while ((next = start + n / atof(argv[1])) < end) {
		while (now() < next)
			usleep(1000);
		if (fork() == 0) {
			execl("/proc/self/exe", argv[0], "child", lines, NULL);
			_exit(127);
		}
		n++;
		reap(WNOHANG);
	}
	reap(0);
	printf("churn %ld processes\n", n);
	return 0;
}

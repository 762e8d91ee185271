// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A runtime with a huge perf-map: writes BYTES of /tmp/perf-PID.map
 * (distinct functions, 64 bytes apart), lives SECONDS more, removes it.
 * usage: bigmap BYTES SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long long want, done = 0, i = 0;
	char path[64], buf[1 << 16];
	struct timespec ts;
	size_t n = 0;
	FILE *f;

	if (argc != 3)
		return 2;
	want = strtoull(argv[1], NULL, 10);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	while (done < want) {
		n += snprintf(buf + n, sizeof(buf) - n, "%llx 40 big_fn_%llu\n",
			      0x7f0000000000ULL + 64 * i, i);
		i++;
		if (n > sizeof(buf) - 64) {
			fwrite(buf, 1, n, f);
			done += n;
			n = 0;
		}
	}
	fclose(f);
	printf("wrote %llu bytes, %llu functions\n", done, i);
	fflush(stdout);
	ts.tv_sec = atoi(argv[2]);
	ts.tv_nsec = 0;
	nanosleep(&ts, NULL);
	unlink(path);
	return 0;
}

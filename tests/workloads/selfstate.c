// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Prints what a process inherits from whoever started it: signal
 * dispositions and mask, credentials, resource limits, open descriptors,
 * umask and environment. A command run under jittrace must print the same
 * as the command run without it.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

extern char **environ;

static void status_lines(void)
{
	static const char *const keys[] = { "SigPnd", "ShdPnd",	    "SigBlk",
					    "SigIgn", "SigCgt",	    "Uid",
					    "Gid",    "Groups",	    "CapInh",
					    "CapPrm", "CapEff",	    "CapBnd",
					    "CapAmb", "NoNewPrivs", "Seccomp" };
	char line[512];
	FILE *f = fopen("/proc/self/status", "r");
	size_t i;

	while (f && fgets(line, sizeof(line), f))
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strncmp(line, keys[i], strlen(keys[i])) &&
			    line[strlen(keys[i])] == ':')
				printf("status %s", line);
	if (f)
		fclose(f);
}

static void limits(void)
{
	struct rlimit rl;
	int i;

	for (i = 0; i < RLIM_NLIMITS; i++)
		if (!getrlimit(i, &rl))
			printf("rlimit %d %llu %llu\n", i,
			       (unsigned long long)rl.rlim_cur,
			       (unsigned long long)rl.rlim_max);
}

static void fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
			printf("fd %s\n", de->d_name);
	if (d)
		closedir(d);
}

int main(void)
{
	mode_t m = umask(0);
	char **e;

	status_lines();
	limits();
	fds();
	printf("umask %03o\n", m);
	for (e = environ; *e; e++)
		printf("env %s\n", *e);
	return 0;
}

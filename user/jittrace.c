// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "version.h"

static const char usage[] =
	"usage: jittrace COMMAND [options]\n"
	"  record   run a command (or attach) and record its memory map\n"
	"           and samples to jittrace.data\n"
	"  maps     each process's rebuilt map, one row per requested region\n"
	"  audit    where the kernel's and userland's views of memory differ\n"
	"  report   samples by command, process, object and symbol\n"
	"  script   every event and sample in time order\n"
	"  export   the profile as pprof or perf.data, names as jittrace\n"
	"           gives them\n"
	"  agent    always on, system-wide: pprof profiles over HTTP,\n"
	"           spooled or pushed\n"
	"  doctor   what this kernel allows and which probes would be used\n"
	"Run 'jittrace COMMAND -h' for a command's options;\n"
	"'jittrace --version' (-V) for the version.\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "record", cmd_record }, { "maps", cmd_maps },
	{ "report", cmd_report }, { "audit", cmd_audit },
	{ "script", cmd_script }, { "doctor", cmd_doctor },
	{ "export", cmd_export }, { "agent", cmd_agent },
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2)
		return jt_usage_error(usage, NULL);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("jittrace version %s\n", JT_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "jittrace: unknown command '%s'\n", argv[1]);
	return jt_usage_error(usage, NULL);
}

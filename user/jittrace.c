// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "jittrace.h"
#include "lib/cli.h"
#include "version.h"

static const struct jt_cmd *const cmds[] = {
	&jt_cmd_record, &jt_cmd_maps,	&jt_cmd_audit, &jt_cmd_report,
	&jt_cmd_script, &jt_cmd_export, &jt_cmd_html,  &jt_cmd_agent,
	&jt_cmd_doctor, NULL,
};

static int usage(FILE *f, int ret)
{
	int i;

	fputs("usage: jittrace COMMAND [options]\n", f);
	for (i = 0; cmds[i]; i++)
		fprintf(f, "  %-8s %s\n", cmds[i]->name, cmds[i]->summary);
	fputs("Run 'jittrace COMMAND -h' for a command's options, 'man "
	      "jittrace-COMMAND'\nfor its page; 'jittrace --version' (-V) for "
	      "the version.\n",
	      f);
	return ret;
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2)
		return usage(stderr, 2);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout, 0);
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("jittrace version %s\n", JT_VERSION);
		return 0;
	}
	/* The build's: man pages' options and completions from the tables. */
	if (!strcmp(argv[1], "__cli"))
		return jt_cli_doc(cmds, argc - 1, argv + 1);
	for (i = 0; cmds[i]; i++)
		if (!strcmp(argv[1], cmds[i]->name))
			return cmds[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "jittrace: unknown command '%s'\n", argv[1]);
	return usage(stderr, 2);
}

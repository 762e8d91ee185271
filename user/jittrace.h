/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The subcommands: each is jittrace CMD's main. */
#ifndef JITTRACE_H
#define JITTRACE_H

#include "lib/cli_opts.h"

/* Each command's options and usage (lib/cli_opts.h), beside its code. */
extern const struct jt_cmd jt_cmd_record, jt_cmd_maps, jt_cmd_report,
	jt_cmd_audit, jt_cmd_script, jt_cmd_doctor, jt_cmd_export, jt_cmd_agent,
	jt_cmd_html;

int cmd_record(int argc, char **argv);
int cmd_maps(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_html(int argc, char **argv);

#endif

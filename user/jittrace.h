/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The subcommands: each is jittrace CMD's main. */
#ifndef JITTRACE_H
#define JITTRACE_H

int cmd_record(int argc, char **argv);
int cmd_maps(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_agent(int argc, char **argv);

#endif

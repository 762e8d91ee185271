/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A command's options, described once: the getopt tables, the usage
 * text, the man page's OPTIONS and the shell completions all come from
 * this table (cli_opts.c, cli_doc.c), so they cannot disagree.
 */
#ifndef JT_CLI_OPTS_H
#define JT_CLI_OPTS_H

#include <stdbool.h>
#include <stdio.h>

/* What an option's argument is, for the shells to complete. */
enum jt_opt_kind {
	JT_ARG_TEXT,  /* anything: nothing to offer */
	JT_ARG_FILE,  /* a file */
	JT_ARG_DIR,   /* a directory */
	JT_ARG_PID,   /* a running process */
	JT_ARG_USER,  /* a user name */
	JT_ARG_WORD,  /* one of words */
	JT_ARG_WORDS, /* some of words, comma-separated */
};

struct jt_opt {
	char letter;	  /* -x; 0: none */
	int key;	  /* getopt's value where there is no letter */
	const char *name; /* --name; NULL: the letter alone */
	const char *arg;  /* the argument's name; NULL: a flag */
	const char *help; /* one paragraph, wrapped where printed */
	enum jt_opt_kind kind;
	const char *const *words; /* JT_ARG_WORD(S): NULL-terminated */
};

struct jt_cmd {
	const char *name;
	const char *summary;  /* one line, for jittrace -h and NAME */
	const char *synopsis; /* after "jittrace NAME ", lines split by \n */
	const struct jt_opt *opts; /* ends with an empty one */
	bool in_order;	   /* options end at the first operand (a command) */
	bool runs_command; /* what follows the options is a command */
	int (*run)(int argc, char **argv);
};

/* getopt_long over cmd's table; -h and --help give 'h'. */
int jt_getopt(int argc, char **argv, const struct jt_cmd *cmd);
/* The usage: synopsis, then each option with its help wrapped. */
void jt_cmd_usage(FILE *f, const struct jt_cmd *cmd);
/* msg (if any) and the usage to stderr; returns 2, the usage exit code. */
int jt_cmd_error(const struct jt_cmd *cmd, const char *msg);
/* The index of s in words, or -1. */
int jt_word_index(const char *const *words, const char *s);

/*
 * cli_doc.c, for the build: jittrace __cli scdoc-head CMD, scdoc CMD
 * (a man page's NAME and SYNOPSIS, its OPTIONS), scdoc-commands
 * (jittrace(1)'s list), bash, zsh (the completions), over cmds.
 */
int jt_cli_doc(const struct jt_cmd *const *cmds, int argc, char **argv);

#endif

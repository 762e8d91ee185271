// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The man pages' OPTIONS and the bash and zsh completions, printed from
 * the same tables the parsers read (jittrace __cli, run by the build).
 */
#include <stdio.h>
#include <string.h>
#include "lib/cli_opts.h"

/* s with scdoc's markup characters escaped */
static void scdoc_text(const char *s)
{
	for (; *s; s++) {
		if (*s == '*' || *s == '_' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

static void scdoc(const struct jt_cmd *c)
{
	const struct jt_opt *o;

	for (o = c->opts; o->help; o++) {
		if (o->letter)
			printf("*-%c*%s", o->letter, o->name ? ", " : "");
		if (o->name)
			printf("*--%s*", o->name);
		if (o->arg) {
			printf(" _");
			scdoc_text(o->arg);
			printf("_");
		}
		printf("\n\t");
		scdoc_text(o->help);
		printf("\n\n");
	}
	printf("*-h*, *--help*\n\tprint the usage and these options\n");
}

/* The page's title, NAME and SYNOPSIS, from the command's table. */
static void scdoc_head(const struct jt_cmd *c)
{
	const char *line = c->synopsis;

	printf("jittrace-%s(1)\n\n# NAME\n\njittrace-%s - ", c->name, c->name);
	scdoc_text(c->summary);
	printf("\n\n# SYNOPSIS\n\n");
	while (line) {
		const char *nl = strchr(line, '\n');
		char buf[256];

		snprintf(buf, sizeof(buf), "%.*s",
			 nl ? (int)(nl - line) : (int)strlen(line), line);
		printf("*jittrace %s* ", c->name);
		scdoc_text(buf);
		printf("%s\n", nl ? "++" : "");
		line = nl ? nl + 1 : NULL;
	}
}

/* jittrace(1)'s list of commands */
static void scdoc_commands(const struct jt_cmd *const *cmds)
{
	int i;

	for (i = 0; cmds[i]; i++) {
		printf("*%s*\n\t", cmds[i]->name);
		scdoc_text(cmds[i]->summary);
		printf(" (*jittrace-%s*(1))\n\n", cmds[i]->name);
	}
}

static void words(const char *const *w, char sep)
{
	int i;

	for (i = 0; w && w[i]; i++)
		printf("%s%s", i ? (char[]){ sep, 0 } : "", w[i]);
}

static void bash_options(const struct jt_cmd *c)
{
	const struct jt_opt *o;

	for (o = c->opts; o->help; o++) {
		if (o->letter)
			printf("-%c ", o->letter);
		if (o->name)
			printf("--%s ", o->name);
	}
	printf("-h --help");
}

/* case patterns "cmd:-o|cmd:--output" of the options taking kind k */
static bool bash_case(const struct jt_cmd *c, const struct jt_opt *o)
{
	if (!o->arg)
		return false;
	printf("\t%s", c->name);
	if (o->letter)
		printf(":-%c%s%s", o->letter, o->name ? "|" : "",
		       o->name ? c->name : "");
	if (o->name)
		printf(":--%s", o->name);
	printf(")\n\t\t");
	switch (o->kind) {
	case JT_ARG_FILE:
		printf("compopt -o filenames; COMPREPLY=($(compgen -f -- "
		       "\"$cur\"))\n");
		break;
	case JT_ARG_DIR:
		printf("compopt -o filenames; COMPREPLY=($(compgen -d -- "
		       "\"$cur\"))\n");
		break;
	case JT_ARG_PID:
		printf("COMPREPLY=($(compgen -W \"$(cd /proc && echo "
		       "[0-9]*)\" -- \"$cur\"))\n");
		break;
	case JT_ARG_USER:
		printf("COMPREPLY=($(compgen -u -- \"$cur\"))\n");
		break;
	case JT_ARG_WORD:
		printf("COMPREPLY=($(compgen -W \"");
		words(o->words, ' ');
		printf("\" -- \"$cur\"))\n");
		break;
	case JT_ARG_WORDS:
		printf("_jittrace_list \"");
		words(o->words, ' ');
		printf("\"\n");
		break;
	default:
		printf(": %s: nothing to offer\n", o->arg);
	}
	return true;
}

static void bash(const struct jt_cmd *const *cmds)
{
	const struct jt_opt *o;
	int i;

	printf("# bash completion for jittrace(1): generated from its option "
	       "tables\n# by 'jittrace __cli bash'.\n\n"
	       "# Comma-separated words: complete the one after the last "
	       "comma.\n_jittrace_list()\n{\n"
	       "\tlocal pre=\n\t[[ $cur == *,* ]] && pre=${cur%%,*},\n"
	       "\tCOMPREPLY=($(compgen -P \"$pre\" -W \"$1\" -- "
	       "\"${cur##*,}\"))\n}\n\n"
	       "_jittrace()\n{\n"
	       "\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	       "prev=${COMP_WORDS[COMP_CWORD-1]} i\n"
	       "\tlocal cmd=${COMP_WORDS[1]}\n\n"
	       "\t# --opt=value: bash splits at '='\n"
	       "\t[[ $cur == = ]] && cur=\n"
	       "\t[[ $prev == = ]] && prev=${COMP_WORDS[COMP_CWORD-2]}\n"
	       "\tif ((COMP_CWORD == 1)); then\n"
	       "\t\tCOMPREPLY=($(compgen -W \"");
	for (i = 0; cmds[i]; i++)
		printf("%s ", cmds[i]->name);
	printf("-h --help -V --version\" -- \"$cur\"))\n\t\treturn\n\tfi\n");
	for (i = 0; cmds[i]; i++) {
		if (!cmds[i]->runs_command)
			continue;
		printf("\t# %s runs a command after its options (or --)\n"
		       "\tif [[ $cmd == %s ]]; then\n"
		       "\t\tfor ((i = 2; i < COMP_CWORD; i++)); do\n"
		       "\t\t\t[[ ${COMP_WORDS[i]} == -- ]] || continue\n"
		       "\t\t\tif ((i + 1 == COMP_CWORD)); then\n"
		       "\t\t\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))\n"
		       "\t\t\telse\n"
		       "\t\t\t\tcompopt -o filenames\n"
		       "\t\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		       "\t\t\tfi\n\t\t\treturn\n\t\tdone\n\tfi\n",
		       cmds[i]->name, cmds[i]->name);
	}
	printf("\tcase $cmd:$prev in\n");
	for (i = 0; cmds[i]; i++)
		for (o = cmds[i]->opts; o->help; o++)
			if (bash_case(cmds[i], o))
				printf("\t\treturn ;;\n");
	printf("\tesac\n\tcase $cmd in\n");
	for (i = 0; cmds[i]; i++) {
		printf("\t%s) COMPREPLY=($(compgen -W \"", cmds[i]->name);
		bash_options(cmds[i]);
		printf("\" -- \"$cur\")) ;;\n");
	}
	printf("\tesac\n}\ncomplete -F _jittrace jittrace\n");
}

/*
 * s inside zsh single quotes: an _arguments description ([...]) or, with
 * colon, a _describe item, where a colon would end the name.
 */
static void zsh_text(const char *s, bool colon)
{
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else if (*s == '[' || *s == ']' || *s == '\\' ||
			 (colon && *s == ':'))
			printf("\\%c", *s);
		else
			putchar(*s);
	}
}

static void zsh_action(const struct jt_opt *o)
{
	printf(":%s:", o->arg);
	switch (o->kind) {
	case JT_ARG_FILE:
		printf("_files");
		break;
	case JT_ARG_DIR:
		printf("_files -/");
		break;
	case JT_ARG_PID:
		printf("_pids");
		break;
	case JT_ARG_USER:
		printf("_users");
		break;
	case JT_ARG_WORD:
		printf("(");
		words(o->words, ' ');
		printf(")");
		break;
	case JT_ARG_WORDS:
		printf("_values -s , %s ", o->arg);
		words(o->words, ' ');
		break;
	default:
		printf(" ");
	}
}

static void zsh_opt(const struct jt_opt *o)
{
	printf("\t\t\t'");
	if (o->letter && o->name)
		printf("(-%c --%s)'{-%c%s,--%s%s}'", o->letter, o->name,
		       o->letter, o->arg ? "+" : "", o->name,
		       o->arg ? "=" : "");
	else if (o->letter)
		printf("-%c%s", o->letter, o->arg ? "+" : "");
	else
		printf("--%s%s", o->name, o->arg ? "=" : "");
	printf("[");
	zsh_text(o->help, false);
	printf("]");
	if (o->arg)
		zsh_action(o);
	printf("' \\\n");
}

static void zsh(const struct jt_cmd *const *cmds)
{
	const struct jt_opt *o;
	int i;

	printf("#compdef jittrace\n# zsh completion for jittrace(1): "
	       "generated from its option tables\n# by 'jittrace __cli "
	       "zsh'.\n\n_jittrace()\n{\n\tlocal -a cmds\n\tcmds=(\n");
	for (i = 0; cmds[i]; i++) {
		printf("\t\t'%s:", cmds[i]->name);
		zsh_text(cmds[i]->summary, true);
		printf("'\n");
	}
	printf("\t)\n\tif ((CURRENT == 2)); then\n"
	       "\t\t_describe -t commands 'jittrace command' cmds\n"
	       "\t\treturn\n\tfi\n"
	       "\tlocal cmd=$words[2]\n\tshift words\n\t((CURRENT--))\n"
	       "\tcase $cmd in\n");
	for (i = 0; cmds[i]; i++) {
		printf("\t%s)\n\t\t_arguments -s%s \\\n", cmds[i]->name,
		       cmds[i]->in_order ? " -S" : "");
		for (o = cmds[i]->opts; o->help; o++)
			zsh_opt(o);
		printf("\t\t\t'(- *)'{-h,--help}'[print the usage and these "
		       "options]'%s\n\t\t;;\n",
		       cmds[i]->runs_command ?
			       " \\\n\t\t\t'*::command:_normal'" :
			       "");
	}
	printf("\tesac\n}\n\n_jittrace \"$@\"\n");
}

int jt_cli_doc(const struct jt_cmd *const *cmds, int argc, char **argv)
{
	int i;

	if (argc == 2 && !strcmp(argv[1], "bash"))
		return bash(cmds), 0;
	if (argc == 2 && !strcmp(argv[1], "zsh"))
		return zsh(cmds), 0;
	if (argc == 2 && !strcmp(argv[1], "scdoc-commands"))
		return scdoc_commands(cmds), 0;
	for (i = 0; argc == 3 && cmds[i]; i++) {
		if (strcmp(argv[2], cmds[i]->name))
			continue;
		if (!strcmp(argv[1], "scdoc"))
			return scdoc(cmds[i]), 0;
		if (!strcmp(argv[1], "scdoc-head"))
			return scdoc_head(cmds[i]), 0;
	}
	fputs("usage: jittrace __cli scdoc|scdoc-head COMMAND | "
	      "scdoc-commands | bash | zsh\n",
	      stderr);
	return 2;
}

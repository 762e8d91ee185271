// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <getopt.h>
#include <string.h>
#include "lib/cli_opts.h"

#define MAX_OPTS 48
#define WIDTH 79
#define LABEL_MAX 24

static int key_of(const struct jt_opt *o)
{
	return o->letter ? o->letter : o->key;
}

int jt_getopt(int argc, char **argv, const struct jt_cmd *cmd)
{
	static const struct jt_cmd *built;
	static struct option longopts[MAX_OPTS + 2];
	static char shortopts[2 * MAX_OPTS + 4];
	const struct jt_opt *o;
	size_t n = 0, s = 0;

	if (built != cmd) {
		built = cmd;
		if (cmd->in_order)
			shortopts[s++] = '+';
		for (o = cmd->opts; o->help && n < MAX_OPTS; o++) {
			if (o->letter) {
				shortopts[s++] = o->letter;
				if (o->arg)
					shortopts[s++] = ':';
			}
			if (o->name)
				longopts[n++] = (struct option){
					o->name,
					o->arg ? required_argument :
						 no_argument,
					NULL, key_of(o)
				};
		}
		shortopts[s++] = 'h';
		shortopts[s] = 0;
		longopts[n++] =
			(struct option){ "help", no_argument, NULL, 'h' };
		longopts[n] = (struct option){ 0 };
	}
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

/* "-o, --output FILE", "    --cow", "-g" */
static int label(char *buf, size_t len, const struct jt_opt *o)
{
	return snprintf(buf, len, "%c%c%s%s%s%s%s", o->letter ? '-' : ' ',
			o->letter ? o->letter : ' ',
			o->letter && o->name ? ", " :
			o->name		     ? "  " :
					       "",
			o->name ? "--" : "", o->name ? o->name : "",
			o->arg ? " " : "", o->arg ? o->arg : "");
}

/* text from column col (where the cursor is) to WIDTH, then again at col */
static void wrap(FILE *f, const char *text, int col)
{
	const char *p = text;
	int room = WIDTH - col;

	while (*p) {
		int len = strlen(p), cut = len;

		if (len > room) {
			for (cut = room; cut > 0 && p[cut] != ' '; cut--)
				;
			if (!cut) /* a word longer than the line */
				for (cut = room; p[cut] && p[cut] != ' '; cut++)
					;
		}
		fprintf(f, "%.*s\n", cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		if (*p)
			fprintf(f, "%*s", col, "");
	}
}

void jt_cmd_usage(FILE *f, const struct jt_cmd *cmd)
{
	const struct jt_opt *o;
	const char *line = cmd->synopsis;
	char buf[128];
	int col = 0, n;

	for (n = 0; line; n++) {
		const char *nl = strchr(line, '\n');

		fprintf(f, "%s jittrace %s %.*s\n",
			n ? "      " : "usage:", cmd->name,
			nl ? (int)(nl - line) : (int)strlen(line), line);
		line = nl ? nl + 1 : NULL;
	}
	for (o = cmd->opts; o->help; o++) {
		n = label(buf, sizeof(buf), o);
		if (n > col && n <= LABEL_MAX)
			col = n;
	}
	col += 4;
	for (o = cmd->opts; o->help; o++) {
		n = label(buf, sizeof(buf), o);
		/* a label past the column puts its help on the next line */
		if (n > col - 4)
			fprintf(f, "  %s\n%*s", buf, col, "");
		else
			fprintf(f, "  %s%*s", buf, col - 2 - n, "");
		wrap(f, o->help, col);
	}
}

int jt_cmd_error(const struct jt_cmd *cmd, const char *msg)
{
	if (msg)
		fprintf(stderr, "jittrace: %s\n", msg);
	jt_cmd_usage(stderr, cmd);
	return 2;
}

int jt_word_index(const char *const *words, const char *s)
{
	int i;

	for (i = 0; words && words[i]; i++)
		if (!strcmp(words[i], s))
			return i;
	return -1;
}

#!/bin/sh
# Expand a man page source (docs/man/*.scd) with what jittrace's own
# option tables say, then render it with scdoc:
#   %HEAD CMD%     the title, NAME and SYNOPSIS of jittrace-CMD
#   %OPTIONS CMD%  its options
#   %COMMANDS%     every command, for jittrace(1)
# usage: man.sh JITTRACE SOURCE.scd OUT.1
set -e
jt=$1 src=$2 out=$3
tmp=$out.scd
: >"$tmp"
while IFS= read -r line; do
	case $line in
	'%HEAD '*'%') c=${line#%HEAD }; "$jt" __cli scdoc-head "${c%\%}" >>"$tmp" ;;
	'%OPTIONS '*'%') c=${line#%OPTIONS }; "$jt" __cli scdoc "${c%\%}" >>"$tmp" ;;
	'%COMMANDS%') "$jt" __cli scdoc-commands >>"$tmp" ;;
	*) printf '%s\n' "$line" >>"$tmp" ;;
	esac
done <"$src"
scdoc <"$tmp" >"$out"
rm -f "$tmp"

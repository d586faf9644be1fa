#!/bin/sh
# The man page docs/chetaev.1: renders with groff (and man -l) without a
# single warning, has the usual sections, and documents exactly the
# options the program prints. For the top level and for every command
# listed by 'chetaev --help', the options of 'chetaev [COMMAND] --help'
# (the "options:" block, every "-x" / "--name" before the description)
# must equal the option tags (.TP) of the man page's subsection of that
# command (.SS COMMAND under COMMANDS; the top level is .SH OPTIONS), and
# every option but -h/--help must appear in the command's SYNOPSIS entry.
# A command whose --help lists session commands ("commands:", as repl's)
# must have the same commands as the non-option .TP tags of its subsection.
# Each difference is reported with the command and the side it is missing
# from. Usage: man.sh CHETAEV MANPAGE
set -u
bin=$1
page=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
checks=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
ok() { checks=$((checks + 1)); }

# ---- rendering ---------------------------------------------------------
LC_ALL=C.UTF-8 groff -ww -z -man -Tutf8 "$page" > "$tmp/groff.err" 2>&1
rc=$?
ok
[ $rc -eq 0 ] && [ ! -s "$tmp/groff.err" ] ||
    bad "groff -ww -z -man: exit $rc, warnings: $(cat "$tmp/groff.err")"
if command -v man > /dev/null 2>&1; then
    ok
    MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings=w -l "$page" > "$tmp/man.txt" 2> "$tmp/man.err"
    rc=$?
    [ $rc -eq 0 ] && [ ! -s "$tmp/man.err" ] ||
        bad "man -l: exit $rc, warnings: $(cat "$tmp/man.err")"
else
    groff -man -Tutf8 "$page" > "$tmp/man.txt" 2> /dev/null
fi
for sec in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" FILES EXAMPLES "SEE ALSO"; do
    ok
    grep -q "^$sec\$" "$tmp/man.txt" || bad "rendered page has no section $sec"
done

# The page's version (.TH, footer) is the program's.
ok
version=$("$bin" --version 2>&1)
grep -q "^\.TH .*\"$version\"" "$page" || bad "the .TH line does not name '$version'"

# ---- options: program side ----------------------------------------------
# help_opts FILE: the option names of the "options:" block of a --help
# text, one per line, sorted.
help_opts() {
    awk '/^[a-z].*:$/ { inopt = ($0 == "options:") ; next }
         inopt && /^  -/ {
             s = substr($0, 3); sub(/   *.*/, "", s)   # the tag: up to 2 spaces
             n = split(s, part, ", ")
             for (i = 1; i <= n; i++) { split(part[i], w, " "); print w[1] }
         }' "$1" | sort -u
}
# help_words FILE: the first words of the "commands:" block (the commands
# of a session such as repl's), sorted.
help_words() {
    awk '/^[a-z].*:$/ { incmd = ($0 == "commands:"); next }
         incmd && /^  [a-z]/ { print $1 }' "$1" | sort -u
}
"$bin" --help > "$tmp/help.top" 2>&1 || bad "chetaev --help: exit $?"
commands=$(help_words "$tmp/help.top")
ok
[ -n "$commands" ] || bad "no commands found in 'chetaev --help'"
help_opts "$tmp/help.top" > "$tmp/prog.top"
for c in $commands; do
    "$bin" "$c" --help > "$tmp/help.$c" 2>&1
    rc=$?
    ok
    [ $rc -eq 0 ] || bad "'chetaev $c --help' exits $rc: $(head -n 1 "$tmp/help.$c")"
    help_opts "$tmp/help.$c" > "$tmp/prog.$c"
    help_words "$tmp/help.$c" > "$tmp/words.$c"
done

# ---- options: man page side ---------------------------------------------
# One file per section: man.top (.SH OPTIONS), man.CMD (.SS CMD under
# .SH COMMANDS); the options of the line after each .TP. Also syn.CMD: the
# words of the command's .SY block in SYNOPSIS.
awk -v dir="$tmp" '
    function opts(line, out,   n, w, i) {
        gsub(/\\-/, "-", line); gsub(/"/, " ", line)
        n = split(line, w, /[ \t]+/)
        for (i = 1; i <= n; i++)
            if (w[i] ~ /^--?[A-Za-z0-9][A-Za-z0-9-]*$/) print w[i] > out
    }
    /^\.SH / { sec = $0; sub(/^\.SH +/, "", sec); gsub(/"/, "", sec)
               sub_ = (sec == "OPTIONS") ? "top" : ""; next }
    /^\.SS / && sec == "COMMANDS" { sub_ = $2; gsub(/"/, "", sub_)
               printf "" > (dir "/man." sub_); print sub_ > (dir "/man.sections"); next }
    /^\.SY / && sec == "SYNOPSIS" { syn = ""; next }
    /^\.B / && sec == "SYNOPSIS" && syn == "" { syn = $2; printf "" > (dir "/syn." syn); next }
    /^\.YS/ { syn = "-"; next }
    sec == "SYNOPSIS" && syn != "" && syn != "-" { opts($0, dir "/syn." syn); next }
    /^\.TP/ { tag = 1; next }
    tag { tag = 0; if (sub_ == "") next
          w = $2; gsub(/"/, "", w)
          if (w ~ /^\\-/) opts($0, dir "/man." sub_)
          else if (sub_ != "top") print w > (dir "/cmd." sub_) }
' "$page"
: >> "$tmp/man.sections"
[ -f "$tmp/man.top" ] || : > "$tmp/man.top"

# compare NAME PROGFILE MANFILE: both directions, one line per option
compare() {
    sort -u "$3" > "$3.s"
    for o in $(comm -23 "$2" "$3.s"); do
        bad "$1: $o is in '$4 --help' but not in the man page ($5)"
    done
    for o in $(comm -13 "$2" "$3.s"); do
        bad "$1: $o is in the man page ($5) but not in '$4 --help'"
    done
    for o in $(comm -12 "$2" "$3.s"); do ok; done
}
compare "chetaev" "$tmp/prog.top" "$tmp/man.top" "chetaev" "section OPTIONS"
for c in $commands; do
    ok
    if [ ! -f "$tmp/man.$c" ]; then
        bad "$c: command of 'chetaev --help' has no subsection '.SS $c' under COMMANDS"
        continue
    fi
    compare "$c" "$tmp/prog.$c" "$tmp/man.$c" "chetaev $c" "COMMANDS, subsection $c"
    # the commands of a session (repl): .TP tags that are not options
    [ -f "$tmp/cmd.$c" ] || : > "$tmp/cmd.$c"
    for w in $(sort -u "$tmp/cmd.$c" | comm -23 "$tmp/words.$c" -); do
        bad "$c: session command '$w' is in 'chetaev $c --help' but not in the man page (subsection $c)"
    done
    for w in $(sort -u "$tmp/cmd.$c" | comm -13 "$tmp/words.$c" -); do
        bad "$c: session command '$w' is in the man page (subsection $c) but not in 'chetaev $c --help'"
    done
    for w in $(sort -u "$tmp/cmd.$c" | comm -12 "$tmp/words.$c" -); do ok; done
    if [ ! -f "$tmp/syn.$c" ]; then
        bad "$c: no SYNOPSIS entry"
        continue
    fi
    for o in $(grep -v -x -e -h -e --help "$tmp/prog.$c"); do
        ok
        grep -q -x -e "$o" "$tmp/syn.$c" || bad "$c: $o is not in the SYNOPSIS entry of $c"
    done
done
for s in $(cat "$tmp/man.sections"); do
    ok
    echo "$commands" | grep -q -x -e "$s" ||
        bad "man page documents command '$s' which 'chetaev --help' does not list"
done

echo "man: $checks checks, $fail failed"
exit $((fail > 0))

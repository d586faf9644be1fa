#!/bin/sh
# completion/chetaev.bash: sourced in bash, its function is called with
# COMP_WORDS/COMP_CWORD as bash would and COMPREPLY is checked: commands,
# the options of every command (equal to those 'chetaev COMMAND --help'
# prints, plus the global --max-nodes where it applies), the values of
# --form/--method/--format/--compiler/--only, the model's parameters after
# --set, and *.nh files and directories for the model argument.
# Usage: completion.sh CHETAEV COMPLETION SRCDIR
set -u
bin=$1
comp=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
checks=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

command -v bash > /dev/null 2>&1 || { echo "completion: bash not found"; exit 1; }
bash -c '. "$1" && complete -p chetaev' sh "$comp" > "$tmp/complete" 2>&1
checks=$((checks + 1))
grep -q -- '-F _chetaev chetaev' "$tmp/complete" ||
    bad "sourcing $comp does not register _chetaev: $(cat "$tmp/complete")"

# expect LINE WANT: the completions of LINE must be exactly the words of
# WANT. LINE is split at blanks as bash would; a trailing blank means an
# empty word is being completed. The cases are collected and run in one
# bash at the end (run_cases).
: > "$tmp/cases"
expect() {
    { printf '%s|' "$1"; printf '%s ' $2; echo; } >> "$tmp/cases"
}
# run_cases: one line "LINE|GOT" per case (builtins only: no process per
# case; the words are compared as sets by one awk at the end).
run_cases() {
    (cd "$tmp/cwd" && bash -c '
        . "$1"
        while IFS="|" read -r line want; do
            read -r -a COMP_WORDS <<< "$line"
            [[ $line == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            COMP_LINE=$line; COMP_POINT=${#COMP_LINE}
            COMPREPLY=()
            _chetaev chetaev "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf "%s|%s\n" "$line" "${COMPREPLY[*]}"
        done < "$2"' sh "$comp" "$tmp/cases")
}

mkdir -p "$tmp/cwd/models"
: > "$tmp/cwd/a.nh"
: > "$tmp/cwd/b.txt"
cp "$src/examples/knife_edge.nh" "$tmp/cwd/knife.nh"

expect "chetaev " "derive emit run check repl --help --version"
expect "chetaev r" "run repl"
expect "chetaev --v" "--version"
expect "chetaev run " "a.nh knife.nh models"
expect "chetaev derive k" "knife.nh"
expect "chetaev run a.nh --form " "full reduced hamilton"
expect "chetaev repl a.nh --form h" "hamilton"
expect "chetaev emit a.nh --form " "full reduced hamilton all"
expect "chetaev derive a.nh --format " "text latex sympy json"
expect "chetaev check a.nh --format " "text json"
expect "chetaev run a.nh --method " "dop853 rk45 cvode euler midpoint rk4"
expect "chetaev run a.nh --compiler " "tcc cc"
expect "chetaev repl a.nh --compiler c" "cc"
expect "chetaev derive a.nh --only mass_" "mass_matrix"
expect "chetaev derive a.nh --only energy,mom" "energy,momenta energy,momenta_star"
expect "chetaev run knife.nh --set " "m= J= g= alpha= c="
expect "chetaev run knife.nh --set al" "alpha="
expect "chetaev run a.nh --dt " ""
expect "chetaev emit a.nh -o " "models"
expect "chetaev run a.nh --plot " "models"
expect "chetaev run a.nh --set m = 2 --dt 1e-3 --pro" "--project"

# Every command's options: equal to the options of 'chetaev CMD --help'
# (the "options:" block) and --max-nodes where 'chetaev --help' names the
# command for it, both when the model is given and before it.
for c in derive emit run check repl; do
    "$bin" "$c" --help > "$tmp/help" 2>&1 || bad "chetaev $c --help failed"
    opts=$(awk '/^[a-z].*:$/ { inopt = ($0 == "options:"); next }
        inopt && /^  -/ { s = substr($0, 3); sub(/   *.*/, "", s)
            n = split(s, part, ", ")
            for (i = 1; i <= n; i++) { split(part[i], w, " "); print w[1] } }' "$tmp/help")
    # the global --max-nodes applies to the commands that derive
    "$bin" --help | grep -q -e "--max-nodes.*($c[,)]" -e "--max-nodes.*, $c[,)]" &&
        opts="$opts --max-nodes"
    expect "chetaev $c a.nh " "$opts"
    expect "chetaev $c -" "$opts"
done

run_cases > "$tmp/got"
ncases=$(wc -l < "$tmp/cases")
checks=$((checks + ncases))
[ "$(wc -l < "$tmp/got")" -eq "$ncases" ] || bad "bash answered $(wc -l < "$tmp/got") of $ncases cases"
paste -d'|' "$tmp/cases" "$tmp/got" | awk -F'|' '
    # same(A, B): A and B hold the same words (each once)
    function same(a, b,   x, y, n, m, i, seen) {
        n = split(a, x, " "); m = split(b, y, " ")
        if (n != m) return 0
        for (i = 1; i <= n; i++) seen[x[i]]++
        for (i = 1; i <= m; i++) if (--seen[y[i]] < 0) return 0
        return 1
    }
    $1 != $3 || !same($2, $4) { printf "FAIL: \047%s\047: got [%s], want [%s]\n", $1, $4, $2 }' > "$tmp/fails"
cat "$tmp/fails"
fail=$((fail + $(wc -l < "$tmp/fails")))

echo "completion: $checks checks, $fail failed"
exit $((fail > 0))

# bash completion for chetaev(1): commands, the options of each command
# (as 'chetaev COMMAND --help' lists them; tests/completion.sh checks
# that), the values of --form, --method, --format, --compiler and --only,
# parameter names of the model for --set, and *.nh model files.
# Installed as share/bash-completion/completions/chetaev; needs nothing
# from the bash-completion package.

_chetaev_commands="derive emit run check repl"

# The options of command $1 (--max-nodes is a global option of the
# commands that derive).
_chetaev_options()
{
    case $1 in
        derive) echo "--format --only -h --help --max-nodes" ;;
        emit) echo "--form -o --prefix --driver --force -h --help --max-nodes" ;;
        run) echo "--form --method --rtol --atol --dt --dt-max --dt-out --t1 --every
                   --max-steps --stats --set --init --project --chart-min --no-rechart
                   --compiler -o --plot --plot-vars --xy -h --help --max-nodes" ;;
        check) echo "--format --loop --plot --time-limit -h --help --max-nodes" ;;
        repl) echo "--form --compiler --max-nodes -h --help" ;;
    esac
}

# The section keys of 'derive --only' (SPEC section 3).
_chetaev_keys="model coordinates velocities parameters lagrangian momenta
mass_matrix euler_lagrange forces constraints constraint_jacobian
constraint_bias reactions energy energy_balance homogeneity
energy_conserved dependent independent alpha L_star energy_star alpha_bar
reduced_mass_matrix reduced_equations momenta_star H_star
poincare_hamilton"

# The parameter names of model file $1 (its 'parameters' statements).
_chetaev_params()
{
    [ -r "$1" ] || return 0
    command awk '$1 == "parameters" {
        for (i = 2; i <= NF && $i !~ /^#/; i++) { sub(/=.*/, "", $i); print $i } }' "$1" 2>/dev/null
}

# Completes the last element of a comma-separated list from words $2.
_chetaev_list()
{
    local cur=$1 head="" w
    [[ $cur == *,* ]] && head=${cur%,*},
    COMPREPLY=()
    for w in $(compgen -W "$2" -- "${cur##*,}"); do
        COMPREPLY+=("$head$w")
    done
}

_chetaev()
{
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd="" model="" i w
    COMPREPLY=()

    # The command, and the model file if one was given already.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ -z $cmd ]]; then
            [[ " $_chetaev_commands " == *" $w "* ]] && cmd=$w
        elif [[ -z $model && $w != -* && $w != = ]]; then
            # bash splits NAME=VALUE at '=': skip the value as well
            case ${COMP_WORDS[i-1]} in
                =) ;;
                --format|--only|--form|-o|--prefix|--method|--dt|--t1|--every|\
                --rtol|--atol|--dt-max|--dt-out|--max-steps|\
                --set|--init|--compiler|--plot|--plot-vars|--xy|--loop|\
                --max-nodes|--chart-min|--time-limit) ;;
                *) model=$w ;;
            esac
        fi
    done
    if [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$_chetaev_commands --help --version" -- "$cur"))
        return 0
    fi

    case $prev in
        --format)
            if [[ $cmd == derive ]]; then
                COMPREPLY=($(compgen -W "text latex sympy json" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "text json" -- "$cur"))
            fi
            return 0 ;;
        --form)
            if [[ $cmd == emit ]]; then
                COMPREPLY=($(compgen -W "full reduced hamilton all" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "full reduced hamilton" -- "$cur"))
            fi
            return 0 ;;
        --method)
            COMPREPLY=($(compgen -W "dop853 rk45 cvode euler midpoint rk4" -- "$cur"))
            return 0 ;;
        --compiler)
            COMPREPLY=($(compgen -W "tcc cc" -- "$cur"))
            return 0 ;;
        --only)
            _chetaev_list "$cur" "$_chetaev_keys"
            return 0 ;;
        --set)
            COMPREPLY=($(compgen -S = -W "$(_chetaev_params "$model")" -- "$cur"))
            compopt -o nospace 2>/dev/null
            return 0 ;;
        -o)
            if [[ $cmd == emit ]]; then
                COMPREPLY=($(compgen -d -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            compopt -o filenames 2>/dev/null
            return 0 ;;
        --plot)
            COMPREPLY=($(compgen -f -X '!*.svg' -- "$cur") $(compgen -d -- "$cur"))
            compopt -o filenames 2>/dev/null
            return 0 ;;
        --dt|--t1|--every|--rtol|--atol|--dt-max|--dt-out|--max-steps|--chart-min|\
        --init|--prefix|--plot-vars|--xy|--loop|--max-nodes|--time-limit|=)
            return 0 ;;
    esac

    if [[ $cur == -* || -n $model ]]; then
        COMPREPLY=($(compgen -W "$(_chetaev_options "$cmd")" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -X '!*.nh' -- "$cur") $(compgen -d -- "$cur"))
        compopt -o filenames 2>/dev/null
    fi
    return 0
}

complete -F _chetaev chetaev

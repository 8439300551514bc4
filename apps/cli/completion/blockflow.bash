# bash completion for blockflow (installed by `make install` under
# share/bash-completion/completions; or `source apps/cli/completion/blockflow.bash`).
# Completes commands, each command's options and their values, page files, block ids of the
# page on the command line (--fetch, --feed ID=, --set ID.ATTR=, explain/grad/gradcheck BLOCK),
# block types (blocks TYPE) and a block's attributes (--set ID.). Ids and types come from the
# program itself: `blockflow fmt PAGE` (canonical, so one "id" per line) and `blockflow blocks`.

_blockflow_page() { # the first *.json word after the command
    local w
    for w in "${COMP_WORDS[@]:2}"; do
        [[ $w == *.json && -f $w ]] && { printf '%s' "$w"; return; }
    done
}

_blockflow_ids() { # block ids of page $1 (a block is one line, or starts with its "id" line)
    [[ -f $1 ]] || return
    blockflow fmt "$1" 2>/dev/null | sed -n 's/^ *{\{0,1\}"id": "\([^"]*\)".*/\1/p'
}

_blockflow_type_of() { # the type of block $2 on page $1
    blockflow fmt "$1" 2>/dev/null | awk -v id="$2" '
        index($0, "\"id\": \"" id "\"") && $0 ~ /^ *\{?"id"/ {
            if (!index($0, "\"type\":")) getline
            sub(/.*"type": "/, ""); sub(/".*/, ""); print; exit
        }'
}

_blockflow_types() { blockflow blocks 2>/dev/null | awk 'NF && $1 ~ /^[A-Z][A-Za-z0-9]*$/ {print $1}'; }

_blockflow_attrs() { # attribute names of type $1 (the "attrs" list of the catalogue entry)
    blockflow blocks --json "$1" 2>/dev/null |
        awk '/^\t"attrs":/ {a = 1} /^\t"[a-z_]*":/ && !/^\t"attrs":/ {a = 0}
             a && /"name":/ {sub(/.*"name":[[:space:]]*"/, ""); sub(/".*/, ""); print}'
}

_blockflow() {
    # under zsh's bashcompinit: bash's 0-based arrays, and no compopt (zsh has none)
    [[ -n ${ZSH_VERSION-} ]] && setopt localoptions ksharrays && compopt() { :; }
    local cur prev cmd page
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    local commands="run check fmt blocks explain train gradcheck grad bench serve help version"
    if (( COMP_CWORD == 1 )); then
        COMPREPLY=($(compgen -W "$commands --help --version -V" -- "$cur"))
        return
    fi
    local limits="--mem-limit --max-elements --max-blocks --max-page-bytes --max-json-depth --confine-files"
    local opts
    case $cmd in
        run) opts="--feed --fetch --out --no-save --device --print --json --quiet --timeout
                   --threads --cache-limit --set --each --watch --ranks --deterministic-reduce $limits" ;;
        check) opts="--json --quiet $limits" ;;
        fmt) opts="--check --in-place" ;;
        blocks) opts="--json" ;;
        explain) opts="--port --json --max-terms --feed" ;;
        gradcheck) opts="--json --eps --tolerance --samples --seed --gpu --loss --feed" ;;
        grad) opts="--dy --in-place -o --quiet --loss --wrt --optimizer --data-parallel --ranks" ;;
        train) opts="--steps --epochs --metrics --log --checkpoint --save-every --resume --feed
                     --device --timeout --threads --ranks --deterministic-reduce --json --quiet $limits" ;;
        bench) opts="--cases --ops --threads --rounds --time --dtype --isa --no-peers --json --device" ;;
        serve) opts="--listen --pages --token --threads --open" ;;
        help) COMPREPLY=($(compgen -W "${commands% version} limits" -- "$cur")); return ;;
    esac
    page=$(_blockflow_page)
    case $prev in
        --device) COMPREPLY=($(compgen -W "auto cpu gpu" -- "$cur")); return ;;
        --dtype) COMPREPLY=($(compgen -W "f32 f64" -- "$cur")); return ;;
        --isa) COMPREPLY=($(compgen -W "generic avx2 avx512" -- "$cur")); return ;;
        --fetch|--metrics|--loss|--dy|--port)
            [[ $prev == --port ]] && return
            COMPREPLY=($(compgen -W "$(_blockflow_ids "$page")" -- "$cur")); return ;;
        --feed)
            if [[ $cur == *=* ]]; then
                compopt -o filenames 2>/dev/null
                COMPREPLY=($(compgen -f -- "${cur#*=}"))
                COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}")
            else
                compopt -o nospace 2>/dev/null
                COMPREPLY=($(compgen -W "$(_blockflow_ids "$page" | sed 's/$/=/')" -- "$cur"))
            fi
            return ;;
        --set)
            compopt -o nospace 2>/dev/null
            if [[ $cur == *.* ]]; then
                local id=${cur%.*} type
                type=$(_blockflow_type_of "$page" "$id")
                COMPREPLY=($(compgen -W "$(_blockflow_attrs "$type" | sed "s/^/$id./; s/\$/=/")" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "$(_blockflow_ids "$page" | sed 's/$/./')" -- "$cur"))
            fi
            return ;;
        --out|--log|--checkpoint|--resume|--cases|--pages|-o)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    if [[ $cmd == blocks ]]; then
        COMPREPLY=($(compgen -W "$(_blockflow_types)" -- "$cur"))
        return
    fi
    if [[ -n $page && $cmd =~ ^(explain|gradcheck|grad)$ && $prev == "$page" ]]; then
        COMPREPLY=($(compgen -W "$(_blockflow_ids "$page")" -- "$cur"))
        return
    fi
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
}

complete -F _blockflow blockflow

# zsh -f zsh_capture.zsh DIR LINE: what zsh's completion offers for LINE
# (TAB at its end), one candidate a line.  DIR holds _dlock (the script
# under test); the matches are written to DIR/out by a compadd wrapper in
# an interactive zsh under zpty.  Exit 77 without zsh/zpty.
zmodload zsh/zpty 2>/dev/null || exit 77
dir=$1 line=$2
zpty z zsh -f -i || exit 77
zpty -w z "PS1= ; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "zstyle ':completion:*' insert-tab false"
# Every match added, whatever the tag (the wrapper adds them as well).
zpty -w z 'compadd() { builtin compadd "$@"; local -a a; builtin compadd -O a "$@"; print -rl -- $a >> '"$dir"'/out }'
# TAB: complete, then a mark on the terminal (the completion is over
# when it shows: keys typed ahead would cut a completion short).
zpty -w z 'dlock-tab() { zle complete-word; print -rn -- "<<tab${nil}-done>>"; }; zle -N dlock-tab; bindkey "^I" dlock-tab'
zpty -w z 'print rea''dy'
zpty -r z _ '*ready*'
: >"$dir/out"
zpty -w -n z "$line"$'\t'
zpty -r z _ '*<<tab-done>>*'
zpty -w z $'\C-u'
zpty -w z 'print do''ne'
zpty -r z _ '*done*'
zpty -d z
cat "$dir/out"

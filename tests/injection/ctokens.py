"""The code tokens of C files with every string and character literal
replaced by a placeholder and every comment removed; prints them one per
line. Used by injection.sh to show that model names reach emitted C only
inside string literals: two models that differ only in their names must
give the same code tokens.  Usage: ctokens.py FILE..."""
import re
import sys

TOKEN = re.compile(r'''
    (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])*')
  | (?P<space>\s+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)
  | (?P<punct>\#\#|\#|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=?|[][(){};:,.?~])
  | (?P<other>.)
''', re.S | re.X)


def tokens(text):
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("comment", "space"):
            continue
        if kind == "other":
            raise SystemExit("unexpected character %r in C text" % m.group())
        yield "STR" if kind in ("string", "char") else m.group()


def main():
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            for t in tokens(f.read()):
                print(t)


if __name__ == "__main__":
    main()

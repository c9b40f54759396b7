#!/bin/sh
# Checks that the C sources follow .clang-format (clang-format --dry-run -Werror);
# --fix rewrites them instead. Exits 77 when clang-format is not installed.
#   check-format.sh [--fix]
cd "$(dirname "$0")/.." || exit 1
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check-format.sh: clang-format is not installed (Debian: apt-get install clang-format)" >&2
  exit 77
fi
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'tools/*.[ch]')
case ${1:-} in
--fix) exec clang-format -i $files ;;
"") ;;
*) echo "usage: check-format.sh [--fix]" >&2; exit 2 ;;
esac
if clang-format --dry-run -Werror $files; then
  echo "check-format.sh: $(echo "$files" | wc -l) files follow .clang-format ($(clang-format --version))"
else
  echo "check-format.sh: the files above do not follow .clang-format; tools/check-format.sh --fix rewrites them" >&2
  exit 1
fi

/* Feeds files (or every file of directories) to the API-sequence harness: its corpus as a regression test. */
#define _DEFAULT_SOURCE /* DT_REG */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return perror(path), 1;
  static uint8_t data[1 << 16]; /* the harness reads at most MAX_OPS calls' worth */
  size_t size = fread(data, 1, sizeof data, f);
  fclose(f);
  LLVMFuzzerTestOneInput(data, size);
  return 0;
}

static int run_path(const char *path, size_t *files) {
  DIR *d = opendir(path);
  if (!d) return run_file(path) == 0 ? (++*files, 0) : 1;
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    rc = run_file(child);
    ++*files;
  }
  closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  size_t files = 0;
  for (int i = 1; i < argc; i++)
    if (run_path(argv[i], &files) != 0) return 1;
  printf("%zu inputs replayed through the API-sequence harness\n", files);
  return files > 0 ? 0 : 1;
}

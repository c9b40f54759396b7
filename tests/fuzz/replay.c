/*
 * Feeds files (or every file of directories) to a fuzz harness it is linked with (fuzz_load.c or
 * fuzz_api.c): a kept corpus as a regression test, without libFuzzer.
 */
#define _DEFAULT_SOURCE /* DT_REG */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* The harness frees what it keeps between inputs, so that leak checkers see everything freed. */
void fuzz_harness_cleanup(void);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return perror(path), 1;
  uint8_t *data = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size == cap) {
      cap = cap ? 2 * cap : 4096;
      uint8_t *grown = realloc(data, cap);
      if (!grown) return free(data), fclose(f), 1;
      data = grown;
    }
    size_t got = fread(data + size, 1, cap - size, f);
    size += got;
    if (got == 0) break;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 0;
}

static int run_dir(const char *path, size_t *files) {
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
    if (run_dir(argv[i], &files) != 0) return 1;
  fuzz_harness_cleanup();
  printf("%zu inputs replayed\n", files);
  return files > 0 ? 0 : 1;
}

/* Feeds files (or every file of directories) to the fuzz harness: the corpus as a regression test. */
#define _DEFAULT_SOURCE /* DT_REG */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_load_cleanup(void);

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
  fuzz_load_cleanup();
  printf("%zu inputs replayed through the loader\n", files);
  return files > 0 ? 0 : 1;
}

/* The public headers compile as pedantic C11 and their declarations link. */
#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <string.h>

int main(void) {
  gcap_dim3 d = GCAP_DIM3(1, 2, 3);
  gcap_context_options o;
  gcap_context_options_init(&o);
  int major = -1, minor = -1, patch = -1;
  gcap_version(&major, &minor, &patch);
  int ok = d.z == 3 && o.device == 0 && o.sim == NULL && major == GCAP_VERSION_MAJOR && minor == GCAP_VERSION_MINOR &&
           patch == GCAP_VERSION_PATCH && strcmp(gcap_status_name(GCAP_SUCCESS), "GCAP_SUCCESS") == 0;
  return ok ? 0 : 1;
}

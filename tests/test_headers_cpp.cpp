// The public headers compile as C++17 and their declarations link.
#include <gcap/gcap.h>
#include <gcap/sim.h>

int main() {
  gcap_dim3 d = GCAP_DIM3(1, 2, 3);
  gcap_context_options o;
  gcap_context_options_init(&o);
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  int major = -1;
  gcap_version(&major, nullptr, nullptr);
  const bool ok = d.y == 2 && o.backend == GCAP_BACKEND_AUTO && so.order == GCAP_SIM_ORDER_CAPTURE &&
                  major == GCAP_VERSION_MAJOR && gcap_status_name(GCAP_ERROR_BACKEND)[0] == 'G';
  return ok ? 0 : 1;
}

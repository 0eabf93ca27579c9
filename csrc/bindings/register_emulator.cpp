#include "bindings/register.hpp"

namespace pytps_bindings {

void register_emulator(py::module_&) {}

}  // namespace pytps_bindings

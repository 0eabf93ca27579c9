#include "bindings/register.hpp"

namespace pytps_bindings {

void register_sse(py::module_&) {}

}  // namespace pytps_bindings

#include "bindings/register.hpp"

namespace pytps_bindings {

void register_recorder(py::module_&) {}

}  // namespace pytps_bindings

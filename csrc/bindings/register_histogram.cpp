#include "bindings/register.hpp"

namespace pytps_bindings {

void register_histogram(py::module_&) {}

}  // namespace pytps_bindings

// An enum argument read as the int a C caller passed. C lets any int through an enum parameter;
// C++ leaves a value outside the enumeration's range undefined once it is read as the enum
// (UBSan's -fsanitize=enum flags it), so the public functions read the bytes as an int first and
// range-check that.
#pragma once

#include <cstring>

namespace pagoda {

template <class Enum>
int enum_arg(const Enum &value) {
    static_assert(sizeof(Enum) == sizeof(int), "the public enums are int-sized");
    int v = 0;
    std::memcpy(&v, &value, sizeof v);
    return v;
}

}  // namespace pagoda

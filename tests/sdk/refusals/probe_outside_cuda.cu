// The probe API in a plain host file (neither nvcc nor the CPU path): refused with what to do.
#include <tilescope/probe.h>

#pragma once
// Peak resident memory of this process so far (VmHWM), in MiB; 0 where unavailable.
double peak_memory_mib();

// Reads lines "N W rank seed epoch shuffle drop_last" from stdin and prints,
// per line, the rank's DistributedSamplerIndices as space-separated numbers
// (or "ERROR <message>"). Used by tests/parity/sampler_parity.py.
#include <iostream>
#include <sstream>
#include <string>

#include "foundation/data_index/sampler.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    gradsync::SamplerOptions o;
    int shuffle = 1, drop_last = 0;
    if (!(in >> o.dataset_size >> o.world_size >> o.rank >> o.seed >> o.epoch >>
          shuffle >> drop_last)) {
      std::cout << "ERROR malformed line\n";
      continue;
    }
    o.shuffle = shuffle != 0;
    o.drop_last = drop_last != 0;
    auto indices = gradsync::DistributedSamplerIndices(o);
    if (!indices.ok()) {
      std::cout << "ERROR " << indices.status().message() << "\n";
      continue;
    }
    for (size_t i = 0; i < indices->size(); ++i) {
      std::cout << (i ? " " : "") << (*indices)[i];
    }
    std::cout << "\n";
  }
  return 0;
}

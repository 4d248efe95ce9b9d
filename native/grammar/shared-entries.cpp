#include "shared-entries.h"

namespace lp::grammar {

std::shared_ptr<const MaskEntry> SharedEntries::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second;
}

void SharedEntries::Put(const std::string& key, std::shared_ptr<const MaskEntry> entry) {
  const size_t bytes = entry->Bytes() + key.size() + 64;
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ + bytes > kBudget) {
    map_.clear();
    bytes_ = 0;
  }
  auto [it, fresh] = map_.insert_or_assign(key, std::move(entry));
  (void)it;
  // (a stub replaced by its whole entry: the stub's few bytes stay counted until the next clear)
  bytes_ += bytes;
  (void)fresh;
}

}  // namespace lp::grammar

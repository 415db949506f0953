#include "local/gpu_inventory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"
#include "local/process.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(Trim(part));
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 6 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string EnvValue(const std::vector<std::string>& env, const std::string& name, bool* found) {
  *found = false;
  std::string value;
  for (const std::string& e : env)
    if (e.size() > name.size() && e.compare(0, name.size() + 1, name + "=") == 0) {
      *found = true;
      value = e.substr(name.size() + 1);
    }
  return value;
}

// NVIDIA devices as nvidia-smi lists them; `note` says why there are none.
std::vector<Gpu> ReadNvidia(const std::vector<std::string>& env, std::string* note) {
  bool has_path = false;
  std::string path = EnvValue(env, "PATH", &has_path);
  StatusOr<std::string> exe = ResolveExecutable("nvidia-smi", "/", path);
  if (!exe.ok()) {
    *note = "no nvidia-smi in PATH";
    return {};
  }
  SubprocessSpec spec;
  spec.argv = {*exe, "--query-gpu=index,uuid,name", "--format=csv,noheader"};
  spec.env = env;
  spec.timeout = Duration(15000);
  StatusOr<SubprocessResult> run = RunSubprocess(spec);
  if (!run.ok()) {
    *note = "nvidia-smi did not start: " + run.status().message();
    return {};
  }
  if (run->timed_out) {
    *note = "nvidia-smi did not answer within 15 s";
    return {};
  }
  if (run->exit_code != 0) {
    std::string why = Trim(run->stdout_text + " " + run->stderr_text);
    if (why.size() > 200) why = why.substr(0, 200) + "…";
    *note = "nvidia-smi failed with exit code " + std::to_string(run->exit_code) +
            (why.empty() ? "" : ": " + why);
    return {};
  }
  return ParseNvidiaSmi(run->stdout_text);
}

// AMD devices from the KFD topology: nodes with a non-zero gpu_id, in node order.
std::vector<Gpu> ReadAmd() {
  const fs::path nodes = "/sys/class/kfd/kfd/topology/nodes";
  std::error_code ec;
  if (!fs::is_directory(nodes, ec)) return {};
  std::vector<int> numbers;
  for (const fs::directory_entry& e : fs::directory_iterator(nodes, ec)) {
    std::string n = e.path().filename().string();
    if (AllDigits(n)) numbers.push_back(std::stoi(n));
  }
  std::sort(numbers.begin(), numbers.end());
  std::vector<Gpu> out;
  for (int n : numbers) {
    std::ifstream id_file(nodes / std::to_string(n) / "gpu_id");
    long long gpu_id = 0;
    if (!(id_file >> gpu_id) || gpu_id == 0) continue;
    std::ifstream name_file(nodes / std::to_string(n) / "name");
    std::string name;
    std::getline(name_file, name);
    int index = static_cast<int>(out.size());
    out.push_back({kAmdGpu, index, std::to_string(index), Trim(name)});
  }
  return out;
}

}  // namespace

StatusOr<GpuInventory> ParseInventorySpec(const std::string& text) {
  GpuInventory inventory;
  inventory.source = kGpuInventoryEnv;
  std::string trimmed = Trim(text);
  if (trimmed.empty() || trimmed == "none") return inventory;
  for (const std::string& part : Split(trimmed, ',')) {
    size_t eq = part.find('=');
    std::string resource = Trim(part.substr(0, eq));
    std::string count = eq == std::string::npos ? "" : Trim(part.substr(eq + 1));
    if ((resource != kNvidiaGpu && resource != kAmdGpu) || !AllDigits(count) ||
        std::stoi(count) > 1024)
      return InvalidError(std::string(kGpuInventoryEnv) + ": \"" + part +
                          "\": expected RESOURCE=COUNT with RESOURCE nvidia.com/gpu or "
                          "amd.com/gpu and COUNT 0..1024, e.g. nvidia.com/gpu=8");
    if (inventory.Count(resource) > 0)
      return InvalidError(std::string(kGpuInventoryEnv) + ": " + resource + " is given twice");
    for (int i = 0; i < std::stoi(count); ++i)
      inventory.gpus.push_back({resource, i, std::to_string(i), "injected"});
  }
  return inventory;
}

std::vector<Gpu> ParseNvidiaSmi(const std::string& csv) {
  std::vector<Gpu> out;
  for (const std::string& line : Split(csv, '\n')) {
    std::vector<std::string> fields = Split(line, ',');
    if (fields.size() < 2 || !AllDigits(fields[0])) continue;
    Gpu g;
    g.resource = kNvidiaGpu;
    g.index = std::stoi(fields[0]);
    bool has_uuid = fields[1].rfind("GPU-", 0) == 0 || fields[1].rfind("MIG-", 0) == 0;
    g.id = has_uuid ? fields[1] : fields[0];
    if (fields.size() > 2) g.name = fields[2];
    out.push_back(g);
  }
  return out;
}

std::vector<Gpu> RestrictToVisible(const std::vector<Gpu>& gpus, const std::string& visible) {
  std::vector<Gpu> out;
  for (const std::string& entry : Split(visible, ',')) {
    const Gpu* match = nullptr;
    for (const Gpu& g : gpus) {
      if (g.resource != kNvidiaGpu) continue;
      bool by_index = AllDigits(entry) && std::stoi(entry) == g.index;
      // CUDA takes a UUID with or without "GPU-", or any unique prefix of it.
      std::string uuid = g.id.rfind("GPU-", 0) == 0 ? g.id.substr(4) : g.id;
      std::string want = entry.rfind("GPU-", 0) == 0 ? entry.substr(4) : entry;
      bool by_uuid = !AllDigits(entry) && !want.empty() && uuid.rfind(want, 0) == 0;
      if (by_index || by_uuid) match = &g;
    }
    if (!match || std::find(out.begin(), out.end(), *match) != out.end()) break;
    out.push_back(*match);
  }
  for (const Gpu& g : gpus)
    if (g.resource != kNvidiaGpu) out.push_back(g);
  return out;
}

StatusOr<GpuInventory> ReadGpuInventory(const std::vector<std::string>& env) {
  bool injected = false;
  std::string spec = EnvValue(env, kGpuInventoryEnv, &injected);
  if (injected) return ParseInventorySpec(spec);
  GpuInventory inventory;
  std::string note;
  std::vector<Gpu> nvidia = ReadNvidia(env, &note);
  std::vector<Gpu> amd = ReadAmd();
  inventory.gpus = nvidia;
  inventory.gpus.insert(inventory.gpus.end(), amd.begin(), amd.end());
  inventory.source = note.empty() ? "nvidia-smi" : note;
  if (!amd.empty()) inventory.source += ", /sys/class/kfd";
  bool narrowed = false;
  std::string visible = EnvValue(env, "CUDA_VISIBLE_DEVICES", &narrowed);
  if (narrowed && !nvidia.empty()) {
    inventory.gpus = RestrictToVisible(inventory.gpus, visible);
    inventory.source += ", narrowed by this shell's CUDA_VISIBLE_DEVICES=" + visible;
  }
  return inventory;
}

}  // namespace trainctl::local

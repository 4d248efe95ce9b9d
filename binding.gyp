# Install-time guard only. llamapeg is built by cmake-js (CMakeLists.txt, via
# scripts/build-native.mjs); this file exists so tools that call node-gyp directly (node-gyp
# rebuild, electron-rebuild, ...) still end up with build/Release/llamapeg.node. The action is a
# no-op when a prebuilt binary for this platform exists under prebuilds/.
{
  "targets": [
    {
      "target_name": "llamapeg_cmake",
      "type": "none",
      "actions": [
        {
          "action_name": "build_llamapeg_with_cmake_js",
          "inputs": [],
          "outputs": ["<(module_root_dir)/build/Release/llamapeg.stamp"],
          "action": ["node", "<(module_root_dir)/scripts/build-native.mjs", "--unless-prebuilt"]
        }
      ]
    }
  ]
}

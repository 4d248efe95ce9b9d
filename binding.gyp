# node-gyp's entry (npm rebuild's gyp path, @electron/rebuild, IDEs): no sources of its own. The one
# target runs the build script, which does nothing when a prebuilt platform package or an
# up-to-date build is present and otherwise builds with cmake-js (CMakeLists.txt), so llama.cpp is
# only ever compiled one way. npm itself runs package.json's install script, not this file.
{
  "targets": [
    {
      "target_name": "llamapeg",
      "type": "none",
      "actions": [
        {
          "action_name": "build_native",
          "inputs": [],
          # never written: the script's own check runs on every build (it takes well under a second)
          "outputs": ["<(PRODUCT_DIR)/llamapeg-build-native.always"],
          "action": ["node", "<(module_root_dir)/scripts/build-native.mjs", "--gyp"]
        }
      ]
    }
  ]
}

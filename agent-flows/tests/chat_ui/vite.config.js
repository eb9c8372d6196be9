import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// A static build (`vite build`): tests/chat_ui.rs serves `dist/` from its own origin, as
// Agent Chat UI is served apart from the LangGraph server it talks to.
export default defineConfig({
  plugins: [react()],
  logLevel: "warn",
  build: {
    sourcemap: false,
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      // zod's comments that Rollup drops (a note on every build, nothing wrong).
      onwarn(warning, warn) {
        if (warning.code === "INVALID_ANNOTATION" && warning.id?.includes("node_modules")) return;
        warn(warning);
      },
    },
  },
});

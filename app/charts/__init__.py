"""The lab's charts: JSON specs, the canvas component that draws them, words and exports."""

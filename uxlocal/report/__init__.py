"""Reports: terminal tables now; HTML with plots later."""

// affine_dump: reads lines "IN.png OUT.png ANGLE TX TY SCALE" from stdin and
// writes OUT.png = gradsync's AffineNearest (RandomAffine's warp) of IN.png
// with those fixed parameters. Used by tests/parity/transform_parity.py.
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <string>

#include "loader/image_decoder.h"
#include "loader/transforms.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string src, dst;
    gradsync::AffineParams p;
    if (!(in >> src >> dst >> p.angle >> p.translate_x >> p.translate_y >>
          p.scale)) {
      std::cerr << "malformed line: " << line << "\n";
      return 2;
    }
    auto image = gradsync::DecodeImageFile(src, 0);
    if (!image.ok()) {
      std::cerr << image.status() << "\n";
      return 1;
    }
    gradsync::Image warped = gradsync::AffineNearest(*image, p);
    cv::Mat out(warped.rows(), warped.cols(), CV_8UC(warped.channels()),
                warped.data(), warped.row_bytes());
    if (out.channels() == 3) cv::cvtColor(out, out, cv::COLOR_RGB2BGR);
    if (!cv::imwrite(dst, out)) return 1;
  }
  return 0;
}
